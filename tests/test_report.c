/*
 * test_report.c - `kforge report` (docs/report.md): the one escaper, a run whose sources
 * and notes hold </script> and HTML, a tampered run's warning, the CLI's files and exit
 * codes, the page `kforge run` leaves, a 10,000-node run's size, and, where Debian's
 * chromium is installed, the page as a headless browser sees it: no console message,
 * the sections and node count in --dump-dom, the script run, and a screenshot whose pixel
 * regions have the colours the page itself declares (its :root variables). Without
 * chromium those tests skip, saying so.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "report/report.h"
#include "util/util.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int cli(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static size_t count(const char *hay, const char *needle) {
    size_t c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) c++;
    return c;
}

static size_t count_ci(const char *hay, const char *needle) {
    size_t c = 0;
    for (const char *p = hay; (p = strcasestr(p, needle)); p += strlen(needle)) c++;
    return c;
}

static void sql(const char *run, const char *q) {
    char p[512];
    snprintf(p, sizeof p, "%s/run.db", run);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, q, NULL, NULL, &err);
    CHECKF(rc == SQLITE_OK, "%s: %s", q, err ? err : "?");
    sqlite3_close(db);
}

static char *report(const char *run, const char *format) {
    kf_ctx *ctx = kf_ctx_new();
    char *out = NULL;
    size_t len = 0;
    kf_status s = kf_report_run(ctx, run, format, &out, &len);
    CHECKF(s == KF_OK && out && strlen(out) == len, "%s", kf_errmsg(ctx));
    kf_ctx_free(ctx);
    return out;
}

/* ---- the escaper ------------------------------------------------------------------------ */

static void t_escape(const void *arg) {
    (void)arg;
    static const char in[] = "</script><b onclick=\"x\">it's & | ok\n\x01\tend";
    kf_buf b;
    kf_buf_init(&b, 1 << 20);
    kf_report_esc(&b, in, sizeof in - 1, 0);
    CHECKF(b.p && !strcmp(b.p, "&lt;/script&gt;&lt;b onclick=&quot;x&quot;&gt;it&#39;s &amp; | ok\n\tend"),
           "%s", b.p);
    kf_buf_free(&b);
    kf_buf_init(&b, 1 << 20);
    kf_report_esc(&b, in, sizeof in - 1, 1); /* a Markdown table cell: one line, | escaped */
    CHECKF(b.p && !strcmp(b.p, "&lt;/script&gt;&lt;b onclick=&quot;x&quot;&gt;it&#39;s &amp; \\| ok \tend"),
           "%s", b.p);
    kf_buf_free(&b);
    kf_buf_init(&b, 1 << 20);
    kf_report_escf(&b, 0, "%s=%d", "<a>", 3);
    CHECKF(b.p && !strcmp(b.p, "&lt;a&gt;=3"), "%s", b.p);
    kf_buf_free(&b);
    /* a GPU's ceilings name the device (escaped), a CPU's its cores: read from a stored
     * verdict's document through the typed verdict */
    struct kf_verdict v;
    CHECK(!kf_verdict_from_text("{\"verdict\": \"accepted\", \"ceilings\": {\"bytes_per_s\": 4.0e12, "
                                "\"flops_per_s\": 6.0e13, \"device\": \"GPU <X>\"}}",
                                &v) &&
          v.has_ceilings);
    kf_buf_init(&b, 1 << 20);
    kf_report_ceilings(&b, &v.ceilings, 0);
    CHECKF(b.p && !strcmp(b.p, "4000.00 GB/s copy, 60000.00 GFLOP/s, GPU &lt;X&gt;"), "%s", b.p);
    kf_buf_free(&b);
    kf_verdict_free(&v);
    CHECK(!kf_verdict_from_text("{\"ceilings\": {\"bytes_per_s\": 1.5e10, \"flops_per_s\": 2.5e11, "
                                "\"cores\": 2}}",
                                &v) &&
          v.has_ceilings);
    kf_buf_init(&b, 1 << 20);
    kf_report_ceilings(&b, &v.ceilings, 1);
    CHECKF(b.p && !strcmp(b.p, "15.00 GB/s copy, 250.00 GFLOP/s, 2 cores"), "%s", b.p);
    kf_buf_free(&b);
    kf_verdict_free(&v);
}

/* ---- a run made through the store ---------------------------------------------------------- */

static const char hostile[] = "</script><script>document.title='pwned'</script><b id=\"injected\">x</b>"
                              "<img src=x onerror=\"document.title='img'\">";

/* A run of saxpy in dir/r: a kept node whose source holds hostile text, a child of it
 * that was rejected with a hostile note and description, and a reverted one. */
static void make_run(const char *dir, char *run, size_t n) {
    snprintf(run, n, "%s/r", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/saxpy");
    kf_store *st = NULL;
    CHECK(kf_store_create(ctx, run, t, NULL, &st) == KF_OK);
    char src[4096];
    snprintf(src, sizeof src,
             "/* %s */\n#include <stdint.h>\nvoid saxpy(float a, const float *x, float *y, int64_t n) {\n"
             "    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];\n}\n",
             hostile);
    int64_t k = kft_kept_node(st, t, src, strlen(src), "c", 1.5);
    kf_node nd;
    memset(&nd, 0, sizeof nd);
    snprintf(nd.ext, sizeof nd.ext, "c");
    snprintf(nd.proposer, sizeof nd.proposer, "agent");
    snprintf(nd.category, sizeof nd.category, "tiling");
    char src2[4096];
    snprintf(src2, sizeof src2, "%s/* one more line */\n", src);
    CHECK(kf_store_put_source(st, src2, strlen(src2), "c", nd.src_hash) == KF_OK);
    nd.parent = k;
    nd.note = (char *)hostile;
    nd.tokens_in = 1200, nd.tokens_out = 300, nd.cost_s = 2.5;
    CHECK(kf_store_add_node(st, &nd) == KF_OK);
    char desc[1024];
    json_t *dj = json_pack("{s:s}", "text", hostile);
    char *ds = json_dumps(dj, JSON_COMPACT);
    snprintf(desc, sizeof desc, "%s", ds);
    free(ds);
    json_decref(dj);
    CHECK(kf_store_event(st, nd.id, "description", desc) == KF_OK);
    nd.state = KF_NODE_REJECTED;
    nd.reasons = "wrong_result";
    nd.verdict_json = "{\"verdict\": \"rejected\", \"reasons\": [{\"code\": \"wrong_result\", \"message\": "
                      "\"</script><i id=\\\"injected2\\\">differs</i>\"}, {\"code\": \"future_reason\"}], "
                      "\"compile\": {\"ok\": true, \"cached\": true, \"seconds\": 0.25}, \"seconds\": 1.5}";
    CHECK(kf_store_finish_node(st, &nd) == KF_OK);
    memset(&nd, 0, sizeof nd);
    snprintf(nd.ext, sizeof nd.ext, "c");
    snprintf(nd.proposer, sizeof nd.proposer, "builtin");
    snprintf(nd.category, sizeof nd.category, "unrolling");
    snprintf(src2, sizeof src2, "%s/* unrolled */\n", src);
    CHECK(kf_store_put_source(st, src2, strlen(src2), "c", nd.src_hash) == KF_OK);
    nd.parent = k;
    CHECK(kf_store_add_node(st, &nd) == KF_OK);
    CHECK(kf_store_event(
              st, nd.id, "critic",
              "{\"decision\":\"reject\",\"why\":\"no shape beats the parent by more than the noise\"}") ==
          KF_OK);
    nd.state = KF_NODE_REVERTED;
    nd.shapes_json = "[{\"sizes\": {\"n\": 1000}, \"speedup\": 1.6, \"win\": true}]";
    nd.speedup = 1.6;
    CHECK(kf_store_finish_node(st, &nd) == KF_OK);
    /* a node the Critic vetoed for what it is (implausible), and its figures */
    memset(&nd, 0, sizeof nd);
    snprintf(nd.ext, sizeof nd.ext, "c");
    snprintf(nd.proposer, sizeof nd.proposer, "builtin");
    snprintf(nd.category, sizeof nd.category, "algorithm");
    snprintf(src2, sizeof src2, "%s/* faster? */\n", src);
    CHECK(kf_store_put_source(st, src2, strlen(src2), "c", nd.src_hash) == KF_OK);
    nd.parent = k;
    CHECK(kf_store_add_node(st, &nd) == KF_OK);
    CHECK(kf_store_event(st, nd.id, "critic",
                         "{\"decision\":\"reject\",\"why\":\"implausible: 400x the reference\",\"checks\":"
                         "[{\"check\":\"integrity\",\"outcome\":\"pass\"},{\"check\":\"plausibility\","
                         "\"outcome\":\"fail\",\"detail\":\"over 100x\"}]}") == KF_OK);
    nd.state = KF_NODE_REVERTED;
    nd.shapes_json = "[{\"sizes\": {\"n\": 1000}, \"speedup\": 400, \"win\": true}]";
    nd.speedup = 400;
    CHECK(kf_store_finish_node(st, &nd) == KF_OK);
    /* a specialisation, measured: its domain is its label */
    memset(&nd, 0, sizeof nd);
    snprintf(nd.ext, sizeof nd.ext, "c");
    snprintf(nd.proposer, sizeof nd.proposer, "builtin");
    snprintf(nd.category, sizeof nd.category, "specialisation");
    snprintf(src2, sizeof src2, "%s/* kforge:when n >= 4096 */\n", src);
    CHECK(kf_store_put_source(st, src2, strlen(src2), "c", nd.src_hash) == KF_OK);
    nd.parent = k;
    CHECK(kf_store_add_node(st, &nd) == KF_OK);
    nd.state = KF_NODE_MEASURED;
    nd.shapes_json = "[{\"sizes\": {\"n\": 1000}, \"speedup\": 1.2, \"win\": false}]";
    nd.speedup = 1.2;
    CHECK(kf_store_finish_node(st, &nd) == KF_OK);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Sources, notes, descriptions and reason messages holding </script> and HTML: the page
 * has one script (its own), none of the elements, and the texts escaped. */
static void t_escape_run(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-report-XXXXXX", run[256];
    CHECK(mkdtemp(dir));
    make_run(dir, run, sizeof run);
    char *h = report(run, "html");
    CHECKF(count_ci(h, "<script") == 1 && count_ci(h, "</script") == 1, "%zu scripts",
           count_ci(h, "<script"));
    CHECK(!strstr(h, "id=\"injected\"") && !strstr(h, "id=\"injected2\"") && !strstr(h, "<img") &&
          !strstr(h, "<b id") && !strstr(h, "<i id"));
    CHECK(strstr(h, "&lt;/script&gt;&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    CHECK(strstr(h, "&lt;i id=&quot;injected2&quot;&gt;differs")); /* the reason's message, escaped */
    /* the stored verdict's reasons, a newer build's code as written, its build and check times */
    CHECKF(
        strstr(h, "<li><code>future_reason</code> </li>") &&
            strstr(h, "Verdict: <strong>rejected</strong>; compiled in 0.25 s (cached); checked in 1.50 s"),
        "the stored verdict is not shown as it was recorded");
    /* the note (in the node's section) and the description, escaped, both there */
    CHECK(count(h, "&lt;b id=&quot;injected&quot;&gt;") >= 3);
    /* every node has its section, the agent's tokens are counted */
    CHECK(count(h, "<article class=\"node\"") == 5 && strstr(h, "data-nodes=\"5\""));
    /* the veto: its state, and its row among the Critic's refusals */
    CHECK(strstr(h, "<li class=\"node\" data-state=\"vetoed\" data-id=\"4\">"));
    CHECK(strstr(h, "<td>reject (veto)</td><td>implausible: 400x the reference</td>"));
    CHECK(count(h, "data-state=\"reverted\" data-id=") == 1);
    /* the winner's path highlighted, the specialisation's domain as its label */
    CHECK(strstr(h, "<li class=\"node path\" data-state=\"kept\" data-id=\"1\">"));
    CHECK(count(h, "<li class=\"node path\"") == 1);
    CHECKF(strstr(h, "<span class=\"when\">when n &gt;= 4096</span>"), "no when label");
    CHECK(strstr(h, "<td>agent</td><td>1</td><td>1200</td><td>300</td>"));
    free(h);
    char *m = report(run, "md");
    CHECK(strstr(m, "## Integrity") && strstr(m, "## Nodes") &&
          strstr(m, "&lt;b id=&quot;injected&quot;&gt;"));
    /* outside the fenced sources nothing of the hostile text is raw */
    for (const char *p = m; (p = strstr(p, "<b id")); p++) {
        const char *fence = NULL;
        for (const char *q = m; q < p; q++)
            if (!strncmp(q, "```", 3) && (q == m || q[-1] == '\n')) fence = fence ? NULL : q, q += 2;
        CHECKF(fence, "raw HTML outside a fence at %.40s", p);
    }
    free(m);
    kf__rmtree(dir);
}

/* A run.db edited by hand: the page and the Markdown say so, and the banner turns. */
static void t_tampered(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-report-XXXXXX", run[256];
    CHECK(mkdtemp(dir));
    make_run(dir, run, sizeof run);
    char *h = report(run, "html");
    CHECK(!strstr(h, "WARNING") && strstr(h, "<div id=\"verdict\" class=\"ok\">") &&
          strstr(h, "<td id=\"seals\">sealed</td>"));
    free(h);
    sql(run, "UPDATE nodes SET speedup = 50 WHERE id = 1");
    h = report(run, "html");
    CHECKF(
        strstr(
            h,
            "<p class=\"warn\">WARNING: run.db was changed outside kforge: node 1 does not match its seal") &&
            strstr(h, "<div id=\"verdict\" class=\"bad\">WARNING") &&
            strstr(h, "<li class=\"node\" data-state=\"tampered\""),
        "%.2000s", h);
    free(h);
    char *m = report(run, "md");
    CHECK(strstr(m, "> **WARNING: run.db was changed outside kforge: node 1"));
    free(m);
    kf__rmtree(dir);
}

/* kforge report: the default file, -o, --format md on stdout, and the errors. */
static void t_cli(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-report-XXXXXX", run[256], args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    make_run(dir, run, sizeof run);
    snprintf(args, sizeof args, "report %s 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "report.html"), "%s", out);
    char path[512];
    snprintf(path, sizeof path, "%s/report.html", run);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size > 1000);
    snprintf(args, sizeof args, "report %s -o %s/x.html 2>&1", run, dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(path, sizeof path, "%s/x.html", dir);
    CHECK(stat(path, &sb) == 0 && sb.st_size > 1000);
    snprintf(args, sizeof args, "report %s --format md", run);
    CHECKF(cli(args, out, sizeof out) == 0 && !strncmp(out, "# kforge report: ", 17) &&
               strstr(out, "## Tree"),
           "%s", out);
    snprintf(args, sizeof args, "report %s --format pdf 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "expected html or md"), "%s", out);
    snprintf(args, sizeof args, "report %s/none 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "none"), "%s", out);
    CHECK(cli("report 2>&1", out, sizeof out) == 2 && strstr(out, "usage"));
    kf__rmtree(dir);
}

/* ---- a run of the loop, seen by chromium ---------------------------------------------- */

/* The chromium to use: $KFT_CHROMIUM, else chromium on PATH; NULL (and why) when none. */
static const char *chromium(char *why, size_t n) {
    const char *c = getenv("KFT_CHROMIUM");
    if (c && *c)
        return access(c, X_OK) ? (snprintf(why, n, "KFT_CHROMIUM=%s is not executable", c), NULL) : c;
    static char found[512];
    const char *path = getenv("PATH");
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path ? path : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(found, sizeof found, "%s/chromium", d);
        if (!access(found, X_OK)) return found;
    }
    snprintf(why, n, "no chromium on PATH (Debian's chromium package, `make deps`; or set KFT_CHROMIUM)");
    return NULL;
}

/* chromium headless on file with extra arguments; stdout to out_path, stderr (its log,
 * the console's messages among them) to log_path. Its exit status. */
static int browse(const char *chr, const char *dir, const char *file, const char *extra, const char *out_path,
                  const char *log_path) {
    char cmd[8192];
    snprintf(
        cmd, sizeof cmd,
        "cd %s && HOME=%s timeout 90 %s --headless --no-sandbox --disable-gpu --no-first-run "
        "--disable-extensions --hide-scrollbars --user-data-dir=%s/profile --enable-logging=stderr --v=0 "
        "%s 'file://%s' > %s 2> %s",
        dir, dir, chr, dir, extra, file, out_path, log_path);
    return kft_run(cmd, NULL, 0);
}

static char *slurp(const char *path) {
    char *t = NULL;
    size_t len = 0;
    if (kf__read_file(path, 64u << 20, &t, &len)) return NULL;
    return t;
}

/* The page's lines of the browser log that come from its console (none is expected). */
static void no_console(const char *log) {
    for (const char *p = log; p && (p = strstr(p, ":CONSOLE")); p++) {
        const char *e = strchr(p, '\n');
        kft_fail_at(__FILE__, __LINE__, "the console said: %.*s", e ? (int)(e - p) : 200, p);
    }
}

/* A real run of a bundled task: 4 evaluations of saxpy's template, in dir/r. */
static void loop_run(const char *dir, char *run, size_t n) {
    char args[1024], out[1 << 16];
    snprintf(run, n, "%s/r", dir);
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 4 --seed 7 --run %s --min-runs 5 --max-runs 8 --min-time 0.01 "
             "--hidden 1 2>&1",
             run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    /* kforge run says where its page is */
    char want[512];
    snprintf(want, sizeof want, "kforge run: the report: %s/report.html", run);
    CHECKF(strstr(out, want), "%s", out);
}

/* The page kforge run leaves: the bundled run's report, whole, without a browser. */
static void t_run_page(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-report-XXXXXX", run[256], file[512];
    CHECK(mkdtemp(dir));
    loop_run(dir, run, sizeof run);
    snprintf(file, sizeof file, "%s/report.html", run);
    char *h = slurp(file);
    CHECK(h && strstr(h, "data-nodes=\"4\"") && count(h, "<li class=\"node") == 4);
    CHECK(strstr(h, "<section id=\"timeline\">") && strstr(h, "<section id=\"nodes\">") &&
          strstr(h, "</html>\n"));
    /* the same page as kforge report makes (but the time it was written) */
    char *again = report(run, "html");
    const char *a = strstr(h, "report written on"), *b2 = strstr(again, "report written on");
    CHECK(a && b2 && !strncmp(h, again, (size_t)(a - h)));
    free(h), free(again);
    kf__rmtree(dir);
}

static void t_browser_dom(const void *arg) {
    (void)arg;
    char why[256], dir[] = "/tmp/kft-report-XXXXXX", run[256], file[512], dom[512], log[512];
    const char *chr = chromium(why, sizeof why);
    if (!chr) kft_skip("%s", why);
    CHECK(mkdtemp(dir));
    loop_run(dir, run, sizeof run);
    snprintf(file, sizeof file, "%s/report.html", run);
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    int rc = browse(chr, dir, file, "--dump-dom", dom, log);
    char *d = slurp(dom), *l = slurp(log);
    CHECKF(rc == 0 && d && strlen(d) > 1000, "chromium exited %d: %.2000s", rc, l ? l : "");
    no_console(l);
    CHECKF(strstr(d, "data-js=\"ok\""), "the page's script did not run: %.1000s", l);
    static const char *const sections[] = {"integrity", "timeline", "tree", "shapes", "roofline",
                                           "failures",  "lessons",  "cost", "nodes"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        char id[64];
        snprintf(id, sizeof id, "<section id=\"%s\">", sections[i]);
        CHECKF(strstr(d, id), "no %s in the DOM", id);
    }
    CHECK(strstr(d, "data-nodes=\"4\""));
    CHECKF(count(d, "<li class=\"node") == 4 && count(d, "<article class=\"node\"") == 4, "%zu tree nodes",
           count(d, "<li class=\"node"));
    CHECK(strstr(d, "id=\"timeline-plot\"") && strstr(d, "id=\"seals\">sealed<"));
    free(d), free(l);
    kf__rmtree(dir);
}

/* The hostile run in the browser: its script alone ran, nothing it holds did. */
static void t_browser_escape(const void *arg) {
    (void)arg;
    char why[256], dir[] = "/tmp/kft-report-XXXXXX", run[256], file[512], dom[512], log[512];
    const char *chr = chromium(why, sizeof why);
    if (!chr) kft_skip("%s", why);
    CHECK(mkdtemp(dir));
    make_run(dir, run, sizeof run);
    char *h = report(run, "html");
    snprintf(file, sizeof file, "%s/page.html", dir);
    FILE *f = fopen(file, "w");
    CHECK(f && fputs(h, f) >= 0 && fclose(f) == 0);
    free(h);
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    int rc = browse(chr, dir, file, "--dump-dom", dom, log);
    char *d = slurp(dom), *l = slurp(log);
    CHECKF(rc == 0 && d, "chromium exited %d: %.2000s", rc, l ? l : "");
    no_console(l);
    CHECK(strstr(d, "data-js=\"ok\"") && strstr(d, "<title>kforge report: "));
    CHECK(!strstr(d, "pwned") || !strstr(d, "<title>pwned"));
    /* text nodes serialise with their quotes bare: only an element would start with '<' */
    CHECK(!strstr(d, "<b id=\"injected\"") && !strstr(d, "<i id=\"injected2\"") && !strstr(d, "<img"));
    CHECK(strstr(d, "&lt;b id=\"injected\"&gt;"));
    CHECK(count_ci(d, "<script") == 1);
    free(d), free(l);
    kf__rmtree(dir);
}

/* ---- the screenshot -------------------------------------------------------------------- */

typedef struct {
    int w, h;
    unsigned char *rgb; /* w * h * 3 */
} image;

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* An 8-bit RGB or RGBA PNG (what chromium writes), not interlaced: 0, or -1. */
static int png_read(const char *path, image *im) {
    char *t = NULL;
    size_t len = 0;
    memset(im, 0, sizeof *im);
    if (kf__read_file(path, 256u << 20, &t, &len) || len < 33 || memcmp(t, "\x89PNG\r\n\x1a\n", 8))
        return free(t), -1;
    const unsigned char *p = (const unsigned char *)t + 8, *end = (const unsigned char *)t + len;
    int bpp = 0;
    unsigned char *z = NULL;
    size_t zn = 0;
    while (p + 12 <= end) {
        uint32_t n = be32(p);
        const unsigned char *type = p + 4, *data = p + 8;
        if (data + n + 4 > end) break;
        if (!memcmp(type, "IHDR", 4)) {
            im->w = (int)be32(data), im->h = (int)be32(data + 4);
            if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[12]) break;
            bpp = data[9] == 6 ? 4 : 3;
        } else if (!memcmp(type, "IDAT", 4)) {
            unsigned char *nz = realloc(z, zn + n);
            if (!nz) break;
            z = nz;
            memcpy(z + zn, data, n);
            zn += n;
        } else if (!memcmp(type, "IEND", 4)) {
            break;
        }
        p = data + n + 4;
    }
    free(t);
    if (!bpp || im->w <= 0 || im->h <= 0 || !z) return free(z), -1;
    size_t stride = (size_t)im->w * (size_t)bpp, raw_n = (stride + 1) * (size_t)im->h;
    unsigned char *raw = malloc(raw_n);
    uLongf got = (uLongf)raw_n;
    if (!raw || uncompress(raw, &got, z, (uLong)zn) != Z_OK || got != raw_n) return free(z), free(raw), -1;
    free(z);
    unsigned char *px = malloc(stride * (size_t)im->h);
    im->rgb = malloc((size_t)im->w * (size_t)im->h * 3);
    if (!px || !im->rgb) return free(raw), free(px), -1;
    for (int y = 0; y < im->h; y++) {
        const unsigned char *row = raw + (size_t)y * (stride + 1) + 1;
        unsigned char *cur = px + (size_t)y * stride, *prev = y ? cur - stride : NULL;
        int f = row[-1];
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)bpp ? cur[x - (size_t)bpp] : 0, b = prev ? prev[x] : 0;
            int c = prev && x >= (size_t)bpp ? prev[x - (size_t)bpp] : 0, v = row[x];
            if (f == 1) v += a;
            else if (f == 2) v += b;
            else if (f == 3) v += (a + b) / 2;
            else if (f == 4) {
                int pp = a + b - c, pa = abs(pp - a), pb = abs(pp - b), pc = abs(pp - c);
                v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
            }
            cur[x] = (unsigned char)v;
        }
        for (int x = 0; x < im->w; x++)
            memcpy(im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3, cur + (size_t)x * (size_t)bpp, 3);
    }
    free(raw), free(px);
    return 0;
}

/* The page's own colour of a :root variable ("--hdr:#1f3a5f") as 0xRRGGBB. */
static unsigned page_colour(const char *page, const char *var) {
    char key[64];
    snprintf(key, sizeof key, "%s:#", var);
    const char *p = strstr(page, key);
    CHECKF(p, "no %s in the page", var);
    return (unsigned)strtoul(p + strlen(key), NULL, 16);
}

/* Every pixel of the rectangle within 8 of colour c in each channel (anti-aliasing and
 * colour management move a flat colour by a few steps at most). */
static void region_is(const image *im, int x0, int y0, int x1, int y1, unsigned c, const char *what) {
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const unsigned char *p = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
            int d = abs(p[0] - (int)(c >> 16 & 255)) + abs(p[1] - (int)(c >> 8 & 255)) +
                    abs(p[2] - (int)(c & 255));
            CHECKF(abs(p[0] - (int)(c >> 16 & 255)) <= 8 && abs(p[1] - (int)(c >> 8 & 255)) <= 8 &&
                       abs(p[2] - (int)(c & 255)) <= 8,
                   "%s: pixel (%d,%d) is #%02x%02x%02x, the page says #%06x (off by %d)", what, x, y, p[0],
                   p[1], p[2], c, d);
        }
}

static long pixels_near(const image *im, unsigned c) {
    long k = 0;
    for (size_t i = 0; i < (size_t)im->w * (size_t)im->h; i++) {
        const unsigned char *p = im->rgb + i * 3;
        k += abs(p[0] - (int)(c >> 16 & 255)) <= 8 && abs(p[1] - (int)(c >> 8 & 255)) <= 8 &&
             abs(p[2] - (int)(c & 255)) <= 8;
    }
    return k;
}

static void shoot(const char *chr, const char *dir, const char *file, const char *png, image *im) {
    char extra[700], out[512], log[512];
    snprintf(extra, sizeof extra, "--window-size=1280,1400 --force-device-scale-factor=1 --screenshot=%s",
             png);
    snprintf(out, sizeof out, "%s/shot.out", dir);
    snprintf(log, sizeof log, "%s/shot.log", dir);
    int rc = browse(chr, dir, file, extra, out, log);
    char *l = slurp(log);
    CHECKF(rc == 0 && png_read(png, im) == 0, "chromium exited %d, screenshot %s unreadable: %.1500s", rc,
           png, l ? l : "");
    no_console(l);
    free(l);
    CHECKF(im->w == 1280 && im->h == 1400, "screenshot %dx%d", im->w, im->h);
}

/* The header, the verdict banner (sealed: the ok colour; tampered: the bad one), and the
 * kept state's colour in the timeline and tree, as the page's own variables say. */
static void t_browser_pixels(const void *arg) {
    (void)arg;
    char why[256], dir[] = "/tmp/kft-report-XXXXXX", run[256], file[512], png[512];
    const char *chr = chromium(why, sizeof why);
    if (!chr) kft_skip("%s", why);
    CHECK(mkdtemp(dir));
    make_run(dir, run, sizeof run);
    char *h = report(run, "html");
    unsigned hdr = page_colour(h, "--hdr"), ok = page_colour(h, "--ok"), bad = page_colour(h, "--bad");
    unsigned kept = page_colour(h, "--s-kept"), rej = page_colour(h, "--s-rejected");
    snprintf(file, sizeof file, "%s/page.html", dir);
    FILE *f = fopen(file, "w");
    CHECK(f && fputs(h, f) >= 0 && fclose(f) == 0);
    free(h);
    image im;
    snprintf(png, sizeof png, "%s/sealed.png", dir);
    shoot(chr, dir, file, png, &im);
    region_is(&im, 0, 0, 8, 56, hdr, "the header's left edge");
    region_is(&im, 1180, 2, 1278, 54, hdr, "the header's right end");
    region_is(&im, 0, 58, 10, 102, ok, "the banner of a sealed run");
    CHECKF(pixels_near(&im, kept) > 200 && pixels_near(&im, rej) > 50, "kept %ld, rejected %ld pixels",
           pixels_near(&im, kept), pixels_near(&im, rej));
    free(im.rgb);
    /* tampered: the banner turns to the page's warning colour */
    sql(run, "UPDATE nodes SET speedup = 50 WHERE id = 1");
    h = report(run, "html");
    f = fopen(file, "w");
    CHECK(f && fputs(h, f) >= 0 && fclose(f) == 0);
    free(h);
    snprintf(png, sizeof png, "%s/tampered.png", dir);
    shoot(chr, dir, file, png, &im);
    region_is(&im, 0, 58, 10, 102, bad, "the banner of a tampered run");
    region_is(&im, 0, 0, 8, 56, hdr, "the header's left edge");
    free(im.rgb);
    kf__rmtree(dir);
}

/* A 10,000-node run: its report under 5 MB, whole subtrees collapsed, the timeline binned
 * (bench/report_bench.c makes the run and times the report; the time is its figure). */
static void t_large(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-report-XXXXXX", cmd[2048], out[1 << 14];
    CHECK(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "%s 10000 %s", kft_bin("kf-report-bench"), dir);
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "%s", out);
    printf("%s", out);
    const char *p = strstr(out, "report_bench: 10000 nodes: html ");
    double secs = 0;
    unsigned long long bytes = 0;
    CHECKF(p && sscanf(p, "report_bench: 10000 nodes: html %lf s, %llu bytes", &secs, &bytes) == 2, "%s",
           out);
    CHECKF(bytes < 5000000ull, "%llu bytes", bytes);
    char run[512], keys[512];
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(keys, sizeof keys, "%s/keys", dir);
    setenv("KFORGE_KEYS", keys, 1);
    char *h = report(run, "html");
    CHECK(strstr(h, "data-nodes=\"10000\"") && strstr(h, "10000 evaluations in 600 bins"));
    CHECK(count(h, "<article class=\"node\"") == KF_REPORT_DETAIL_MAX &&
          strstr(h, "none on the way to a winner"));
    CHECK(count(h, "<li class=\"node") <= KF_REPORT_TREE_MAX + 64);
    free(h);
    kf__rmtree(dir);
}

/* ---- a system run (kforge system run, docs/report.md "A system run") ------------------ */

/* A real system run of the bundled norm_softmax_sum, in dir/s: one evaluation per slot,
 * all three slots, a scripted agent (tests/system/agent.sh) that gives softmax and
 * rmsnorm their honest fast kernels and sum the planted local win that loses in the step
 * (tests/system/sum_small_slow.c, behind a comment holding </script> and HTML). */
static void system_run(const char *dir, char *run, size_t n) {
    char args[2048], out[1 << 16];
    snprintf(run, n, "%s/s", dir);
    snprintf(args, sizeof args,
             "system run pipelines/c/norm_softmax_sum/pipeline.json --run %s --budget 1 --slots 3 "
             "--min-time 0.02 --agent 'cmd:sh %s' 2>&1",
             run, kft_src("tests/system/agent.sh"));
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    /* kforge system run says where its page is, as kforge run does */
    char want[512];
    snprintf(want, sizeof want, "kforge system run: the report: %s/report.html", run);
    CHECKF(strstr(out, want), "%s", out);
    CHECKF(strstr(out, "slot sum: local_win_global_loss"), "the planted case did not lose in the step: %s",
           out);
}

static json_t *record(const char *run) {
    char p[512];
    snprintf(p, sizeof p, "%s/system.json", run);
    json_t *r = json_load_file(p, 0, NULL);
    CHECKF(r, "%s unreadable", p);
    return r;
}

/* How many iterations of the record have outcome oc. */
static int outcomes(const json_t *rec, const char *oc) {
    int k = 0;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(rec, "iterations"), i, it) {
        const char *o = json_string_value(json_object_get(it, "outcome"));
        k += o && !strcmp(o, oc);
    }
    return k;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

/* The report of a real system run, without a browser: the page's sections and counts,
 * the Markdown's tables, system report as the same renderer, the JSON counts, the
 * hostile source escaped, a record or slot run edited by hand, and an older record. */
static void t_system(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-report-XXXXXX", run[256], file[512], args[1024], out[1 << 17];
    CHECK(mkdtemp(dir));
    system_run(dir, run, sizeof run);
    json_t *rec = record(run);
    int keeps = outcomes(rec, "system_keep"), exported = 0;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(rec, "iterations"), i, it) exported +=
        json_object_get(it, "candidate") != NULL;
    CHECKF(json_array_size(json_object_get(rec, "iterations")) == 3 &&
               outcomes(rec, "local_win_global_loss") == 1,
           "iterations %zu", json_array_size(json_object_get(rec, "iterations")));
    /* the figures the report needs are recorded: local intervals, the step's shares */
    it = json_array_get(json_object_get(rec, "iterations"), 2);
    CHECK(!strcmp(json_string_value(json_object_get(it, "slot")), "sum"));
    CHECK(json_array_size(json_object_get(json_object_get(it, "local"), "shapes")) == 2);
    CHECK(json_array_size(json_object_get(it, "stages")) == 3 &&
          json_is_object(json_object_get(it, "step_ns")));
    CHECK(json_is_string(json_object_get(rec, "pipeline_sha256")));
    json_decref(rec);

    snprintf(file, sizeof file, "%s/report.html", run);
    char *h = slurp(file);
    CHECK(h);
    static const char *const sections[] = {"shares", "lwgl", "iterations", "pipeline", "integrity", "nodes"};
    for (size_t q = 0; q < sizeof sections / sizeof sections[0]; q++) {
        char id[64];
        snprintf(id, sizeof id, "<section id=\"%s\">", sections[q]);
        CHECKF(strstr(h, id), "no %s", id);
    }
    CHECK(strstr(h, "data-kind=\"system\" data-iterations=\"3\" data-lwgl=\"1\""));
    CHECK(count(h, "<tr class=\"lwgl-case\">") == 1 && strstr(h, "id=\"lwgl-count\" data-count=\"1\""));
    CHECK(count(h, "<tr class=\"iteration\">") == 3 && count(h, "<tr class=\"stage\">") == 3);
    /* two bars (before, after) of three stages each, and the end-to-end interval */
    CHECKF(count(h, "<rect class=\"bar st-") == 6, "%zu bar segments", count(h, "<rect class=\"bar st-"));
    CHECK(strstr(h, "<p id=\"e2e\">") && strstr(h, "(95% interval)"));
    CHECK(strstr(h, "is not above zero; its stages took"));
    CHECK(strstr(h, "<td id=\"seals\">sealed</td>") && count(h, "<td class=\"slot-seals\">sealed</td>") == 3);
    CHECK(strstr(h, "(the pipeline on disk matches)") && !strstr(h, "WARNING"));
    /* the sum's winner has a section, linked from the case */
    CHECK(strstr(h, "<article class=\"node\" id=\"i2-n-1\">") && strstr(h, "href=\"#i2-n-1\""));
    CHECKF(count(h, "<article class=\"node\"") == (size_t)exported, "%zu node sections, %d exports",
           count(h, "<article class=\"node\""), exported);
    /* the hostile comment of the sum's source is text, and the page has one script */
    CHECK(count_ci(h, "<script") == 1 && !strstr(h, "<b id=\"injected\""));
    CHECK(strstr(h, "&lt;/script&gt;&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    free(h);

    /* Markdown: the same sections as tables; system report is the same text */
    char *m = report(run, "md");
    CHECK(strstr(m, "## Stage shares\n\n| stage | slot | before ns | before share |"));
    CHECK(strstr(m, "\n| norm | rmsnorm | ") && strstr(m, "\n| softmax | softmax | ") &&
          strstr(m, "\n| sum | sum | "));
    CHECK(strstr(m, "## Local wins, global losses\n\n1 of "));
    CHECK(strstr(m, "| why it was refused |\n|---|---|---|---|---|\n| sum | "));
    CHECK(strstr(m, "| system.json | sealed | "));
    /* the source is in a fence; the tables hold no markup */
    const char *tb = strstr(m, "## Stage shares"), *te = strstr(m, "## Nodes");
    CHECK(tb && te && !memchr(tb, '<', (size_t)(te - tb)));
    snprintf(args, sizeof args, "system report %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 && !strcmp(out, m),
           "system report differs from report --format md");
    free(m);
    snprintf(args, sizeof args, "system report %s --json", run);
    CHECK(cli(args, out, sizeof out) == 0);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(j, "%s", out);
    CHECK(json_integer_value(json_object_get(j, "local_win_global_loss")) == 1);
    CHECK(json_integer_value(json_object_get(j, "local_wins")) == keeps + 1);
    CHECK(json_number_value(json_object_get(j, "arbor_rate")) == 0.39);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(j, "integrity"), "seals")), "sealed"));
    CHECK(json_array_size(json_object_get(json_object_get(j, "integrity"), "slot_runs")) == 3);
    json_decref(j);

    /* the record edited by hand: a better end-to-end figure */
    char path[512], *orig;
    snprintf(path, sizeof path, "%s/system.json", run);
    CHECK((orig = slurp(path)));
    rec = record(run);
    json_object_set_new(rec, "end_to_end_speedup", json_real(9.5));
    CHECK(json_dump_file(rec, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0);
    json_decref(rec);
    h = report(run, "html");
    CHECKF(strstr(h, "<p class=\"warn\">WARNING: system.json was changed outside kforge") &&
               strstr(h, "<div id=\"verdict\" class=\"bad\">WARNING") &&
               strstr(h, "<td id=\"seals\">tampered</td>"),
           "%.3000s", h);
    free(h);
    m = report(run, "md");
    CHECK(strstr(m, "> **WARNING: system.json was changed outside kforge"));
    free(m);
    write_text(path, orig);
    h = report(run, "html");
    CHECK(!strstr(h, "WARNING") && strstr(h, "<td id=\"seals\">sealed</td>"));
    free(h);
    /* a slot run's run.db edited by hand */
    char slot[512];
    snprintf(slot, sizeof slot, "%s/slot-sum", run);
    sql(slot, "UPDATE nodes SET speedup = 50 WHERE id = 1");
    h = report(run, "html");
    CHECKF(strstr(h, "<p class=\"warn\">WARNING: slot sum (") &&
               strstr(h, "run.db was changed outside kforge: node 1 does not match its seal") &&
               strstr(h, "<div id=\"verdict\" class=\"bad\">"),
           "%.3000s", h);
    free(h);

    /* an older record: no seal, no local intervals, no per-iteration stages, no final
     * bench: it renders, saying what is missing */
    rec = record(run);
    json_object_del(rec, "profile_after");
    json_object_del(rec, "pipeline_sha256");
    json_array_foreach(json_object_get(rec, "iterations"), i, it) {
        json_object_del(it, "local");
        json_object_del(it, "stages");
        json_object_del(it, "step_ns");
    }
    CHECK(json_dump_file(rec, path, JSON_INDENT(2)) == 0);
    json_decref(rec);
    snprintf(path, sizeof path, "%s/system.seal", run);
    CHECK(unlink(path) == 0);
    m = report(run, "md");
    CHECKF(strstr(m, "After: not recorded") && strstr(m, "(its interval not recorded)") &&
               strstr(m, "WARNING: system.json has no seal") &&
               strstr(m, "| system.json | unsealed | not recorded"),
           "%s", m);
    free(m);
    h = report(run, "html");
    CHECK(count(h, "<rect class=\"bar st-") == 3 && strstr(h, "After: not recorded"));
    free(h);
    free(orig);
    /* a directory that is not a system run */
    snprintf(args, sizeof args, "system report %s 2>&1", dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "not a system run"), "%s", out);
    kf__rmtree(dir);
}

/* The system run's page in chromium: no console message, its sections and counts in the
 * DOM, the bar chart drawn in the stages' own colours at their widths, the banner turning
 * when the record is edited. */
static void t_system_browser(const void *arg) {
    (void)arg;
    char why[256], dir[] = "/tmp/kft-report-XXXXXX", run[256], file[512], dom[512], log[512], png[512];
    const char *chr = chromium(why, sizeof why);
    if (!chr) kft_skip("%s", why);
    CHECK(mkdtemp(dir));
    system_run(dir, run, sizeof run);
    snprintf(file, sizeof file, "%s/report.html", run);
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    int rc = browse(chr, dir, file, "--dump-dom", dom, log);
    char *d = slurp(dom), *l = slurp(log);
    CHECKF(rc == 0 && d && strlen(d) > 1000, "chromium exited %d: %.2000s", rc, l ? l : "");
    no_console(l);
    CHECK(strstr(d, "data-js=\"ok\""));
    CHECK(strstr(d, "<section id=\"shares\">") && strstr(d, "<section id=\"lwgl\">") &&
          strstr(d, "<section id=\"integrity\">"));
    CHECK(count(d, "<tr class=\"lwgl-case\">") == 1 && strstr(d, "data-count=\"1\""));
    CHECK(count(d, "<rect class=\"bar st-") == 6 && strstr(d, "id=\"seals\">sealed<"));
    CHECK(!strstr(d, "<b id=\"injected\"") && count_ci(d, "<script") == 1);
    free(d), free(l);

    /* the chart's pixels: each stage's colour, from the page's own variables, covers about
     * the area of its two segments (less their 1-pixel white outline) and its swatches */
    char *h = slurp(file);
    image im;
    snprintf(png, sizeof png, "%s/system.png", dir);
    shoot(chr, dir, file, png, &im);
    region_is(&im, 0, 58, 10, 102, page_colour(h, "--ok"), "the banner of a sealed system run");
    for (int k = 0; k < 3; k++) {
        char var[32], cls[64];
        snprintf(var, sizeof var, "--stage-%d", k);
        snprintf(cls, sizeof cls, "<rect class=\"bar st-%d\"", k);
        unsigned c = page_colour(h, var);
        double area = 0;
        for (const char *p = h; (p = strstr(p, cls)); p++) {
            double w = 0;
            const char *wp = strstr(p, " width=\"");
            CHECK(wp && sscanf(wp, " width=\"%lf\"", &w) == 1);
            if (w > 1) area += (w - 1) * 39;
        }
        long got = pixels_near(&im, c);
        /* the swatches: 12 x 12 in the legend and in the list of stages */
        double want = area + 2 * 144;
        CHECKF(got > 0.85 * want && got < 1.15 * want + 200, "%s (#%06x): %ld pixels, the bars' area %.0f",
               var, c, got, want);
    }
    CHECKF(pixels_near(&im, page_colour(h, "--o-lwgl")) > 100,
           "no local-win/global-loss badge in the screenshot");
    free(im.rgb);
    free(h);
    /* the record edited by hand: the banner turns to the warning colour */
    char path[512];
    snprintf(path, sizeof path, "%s/system.json", run);
    json_t *rec = record(run);
    json_object_set_new(rec, "end_to_end_speedup", json_real(9.5));
    CHECK(json_dump_file(rec, path, JSON_INDENT(2)) == 0);
    json_decref(rec);
    h = report(run, "html");
    snprintf(file, sizeof file, "%s/tampered.html", dir);
    write_text(file, h);
    snprintf(png, sizeof png, "%s/tampered.png", dir);
    shoot(chr, dir, file, png, &im);
    region_is(&im, 0, 58, 10, 102, page_colour(h, "--bad"), "the banner of a tampered system run");
    free(im.rgb);
    free(h);
    kf__rmtree(dir);
}

void kft_register_report(void) {
    kft_add("report/escape", t_escape, NULL, 10);
    kft_add("report/escape_run", t_escape_run, NULL, 60);
    kft_add("report/tampered", t_tampered, NULL, 60);
    kft_add("report/cli", t_cli, NULL, 60);
    kft_add("report/run_page", t_run_page, NULL, 240);
    kft_add("report/browser_dom", t_browser_dom, NULL, 240);
    kft_add("report/browser_escape", t_browser_escape, NULL, 180);
    kft_add("report/browser_pixels", t_browser_pixels, NULL, 240);
    kft_add("report/large", t_large, NULL, 300);
    kft_add("report/system", t_system, NULL, 480);
    kft_add("report/system_browser", t_system_browser, NULL, 480);
}
