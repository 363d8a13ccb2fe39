/*
 * test_agent.c - the context pack, the cmd agent and the openai agent.
 *
 * The openai agent talks to a stub HTTP/1.1 server in a thread of the test (127.0.0.1,
 * a port the kernel picks), which plays a good server, a rate-limited one, a failing
 * one, one that answers garbage, no code, too much, too slowly, or refuses the key; a
 * closed port plays a dead endpoint. Nothing leaves the machine.
 */
#define _GNU_SOURCE
#include "kft.h"
#include "kft_http.h"

#include "agent/agent.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) { return (double)kf__now_ns() / 1e9; }

static const char *orempty(const char *s) { return s ? s : ""; }
#define CHECKSTR(hay, needle) \
    CHECKF(strstr(orempty(hay), (needle)), "expected '%s' in '%s'", (needle), orempty(hay))

/* ---- the pack ------------------------------------------------------------------------ */

static const char task_json[] =
    "{\"name\": \"saxpy\", \"backend\": \"c\", \"entry\": \"saxpy\", \"sizes\": {\"n\": [1, 1000]}}";
static const char parent_src[] = "void saxpy(float *y, const float *x, float a, long n) {\n"
                                 "    for (long i = 0; i < n; i++) y[i] += a * x[i];\n}\n";

static void small_pack(kf_pack *p, const char *ext) {
    kf_pack_in in;
    memset(&in, 0, sizeof in);
    in.task_dir = "tasks/c/saxpy";
    in.task_json = task_json;
    in.shapes_json = "[{\"n\": 1000}]";
    in.parent_id = 7;
    in.parent_src = parent_src;
    in.ext = ext;
    in.category = "vectorisation";
    kf_ctx *ctx = kf_ctx_new();
    CHECKF(kf_pack_build(ctx, &in, p) == KF_OK, "%s", kf_errmsg(ctx));
    kf_ctx_free(ctx);
}

static void t_pack_tokens(const void *arg) {
    (void)arg;
    CHECK(kf_text_tokens(0) == 0);
    CHECK(kf_text_tokens(1) == 1);
    CHECK(kf_text_tokens(4) == 1);
    CHECK(kf_text_tokens(5) == 2);
    CHECK(kf_text_tokens(4000) == 1000);
    CHECK(!strcmp(kf_pack_section_name(KF_PACK_LESSONS), "lessons"));
    CHECK(kf_pack_default_budget(KF_PACK_PARENT) == 8000);
}

static json_t *section_meta(json_t *root, const char *name) {
    return json_object_get(json_object_get(root, "sections"), name);
}

/* Everything fits: sections embedded as JSON, counts recorded, nothing marked. */
static void t_pack_fits(const void *arg) {
    (void)arg;
    kf_pack p;
    small_pack(&p, "c");
    json_error_t je;
    json_t *j = json_loads(p.json, 0, &je);
    CHECKF(j, "pack JSON invalid: %s", je.text);
    CHECK(json_integer_value(json_object_get(j, "kforge_pack")) == 1);
    CHECK(json_is_object(json_object_get(j, "task")));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(j, "task"), "entry")), "saxpy"));
    CHECK(json_is_array(json_object_get(j, "shapes")));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(j, "parent"), "source")), parent_src));
    CHECK(json_integer_value(json_object_get(json_object_get(j, "parent"), "id")) == 7);
    CHECK(json_is_null(json_object_get(j, "verdict")));
    CHECK(json_is_array(json_object_get(j, "lessons")) &&
          json_array_size(json_object_get(j, "lessons")) == 0);
    for (int s = 0; s < KF_PACK_NSECTIONS; s++) {
        json_t *m = section_meta(j, kf_pack_section_name((kf_pack_section)s));
        CHECKF(m, "no meta for %s", kf_pack_section_name((kf_pack_section)s));
        CHECK(json_integer_value(json_object_get(m, "tokens")) == p.tokens[s]);
        CHECK(json_integer_value(json_object_get(m, "budget")) == kf_pack_default_budget((kf_pack_section)s));
        CHECK(!json_is_true(json_object_get(m, "truncated")) && !p.truncated[s]);
        CHECK(p.tokens[s] == p.full_tokens[s]);
    }
    CHECK(p.tokens[KF_PACK_PARENT] == kf_text_tokens(strlen(parent_src)));
    CHECK(p.tokens[KF_PACK_TASK] == kf_text_tokens(strlen(task_json)));
    CHECK(p.tokens[KF_PACK_LESSONS] == 0);
    CHECK(p.tokens_prompt == kf_text_tokens(strlen(p.system) + strlen(p.prompt)));
    CHECK(json_integer_value(json_object_get(j, "prompt_tokens")) == p.tokens_prompt);
    CHECKSTR(p.prompt, "```c\nvoid saxpy");
    CHECKSTR(p.prompt, "node 7");
    CHECKSTR(p.prompt, "'vectorisation'");
    CHECKSTR(p.prompt, "\"entry\": \"saxpy\"");
    CHECK(!strstr(p.prompt, "truncated"));
    CHECK(!strstr(p.prompt, "# Lessons")); /* an empty section is left out */
    json_decref(j);
    kf_pack_free(&p);
    kf_pack_free(&p); /* twice: a freed pack is a zeroed one */

    small_pack(&p, "cu");
    CHECKSTR(p.prompt, "```cuda\n");
    CHECK(!strcmp(p.ext, "cu"));
    kf_pack_free(&p);

    kf_ctx *ctx = kf_ctx_new();
    kf_pack_in in;
    memset(&in, 0, sizeof in);
    in.ext = "py";
    CHECK(kf_pack_build(ctx, &in, &p) == KF_EUSAGE);
    CHECKSTR(kf_errmsg(ctx), "'py'");
    in.ext = "c";
    in.budget[KF_PACK_TASK] = -5;
    CHECK(kf_pack_build(ctx, &in, &p) == KF_EUSAGE);
    kf_ctx_free(ctx);
}

/* Oversized sections are cut to their allowances with markers, in the JSON and the
 * prompt alike; the counts say what was sent and what there was. */
static void t_pack_truncates(const void *arg) {
    (void)arg;
    /* a long task.json, a 40 KB source with distinct first and last lines */
    kf_buf task, src, verdict;
    kf_buf_init(&task, (size_t)-1);
    kf_buf_init(&src, (size_t)-1);
    kf_buf_init(&verdict, (size_t)-1);
    kf_buf_printf(&task, "{\"name\": \"big\", \"notes\": [");
    for (int i = 0; i < 1000; i++) kf_buf_printf(&task, "%s\"note %d\"", i ? ", " : "", i);
    kf_buf_printf(&task, "]}");
    kf_buf_printf(&src, "/* FIRST LINE */\n");
    for (int i = 0; i < 1000; i++) kf_buf_printf(&src, "int v%d = %d; /* padding padding */\n", i, i);
    kf_buf_printf(&src, "/* LAST LINE */\n");
    kf_buf_printf(&verdict, "{\"verdict\": \"rejected\", \"log\": \"");
    for (int i = 0; i < 3000; i++) kf_buf_printf(&verdict, "err\\u00e9 ");
    kf_buf_printf(&verdict, "\"}");
    static char msgs[50][400];
    kf_pack_failure fails[50];
    for (int i = 0; i < 50; i++) {
        memset(msgs[i], 'm', sizeof msgs[i] - 1);
        msgs[i][sizeof msgs[i] - 1] = 0;
        fails[i] = (kf_pack_failure){100 + i, "wrong_result", msgs[i]};
    }
    const char *cons[] = {"TILE=256 fails to compile at parent 3", "BLOCK must divide 1024"};

    kf_pack_in in;
    memset(&in, 0, sizeof in);
    in.task_json = task.p;
    in.shapes_json = "[{\"n\": 1000}]";
    in.parent_src = src.p;
    in.verdict_json = verdict.p;
    in.failures = fails;
    in.nfailures = 50;
    in.constraints = cons;
    in.nconstraints = 2;
    in.budget[KF_PACK_TASK] = 100;
    in.budget[KF_PACK_PARENT] = 500;
    in.budget[KF_PACK_VERDICT] = 200;
    in.budget[KF_PACK_FAILURES] = 300;
    kf_ctx *ctx = kf_ctx_new();
    kf_pack p;
    CHECKF(kf_pack_build(ctx, &in, &p) == KF_OK, "%s", kf_errmsg(ctx));
    json_error_t je;
    json_t *j = json_loads(p.json, 0, &je);
    CHECKF(j, "pack JSON invalid: %s", je.text);

    const struct {
        kf_pack_section s;
        int64_t budget;
        size_t full;
    } cut[] = {
        {KF_PACK_TASK, 100, task.len}, {KF_PACK_PARENT, 500, src.len}, {KF_PACK_VERDICT, 200, verdict.len}};
    for (int i = 0; i < 3; i++) {
        kf_pack_section s = cut[i].s;
        const char *name = kf_pack_section_name(s);
        CHECKF(p.truncated[s], "%s not marked truncated", name);
        CHECKF(p.tokens[s] <= cut[i].budget && p.tokens[s] > cut[i].budget * 3 / 4,
               "%s: %lld tokens for an allowance of %lld", name, (long long)p.tokens[s],
               (long long)cut[i].budget);
        CHECK(p.full_tokens[s] == kf_text_tokens(cut[i].full));
        json_t *m = section_meta(j, name);
        CHECK(json_is_true(json_object_get(m, "truncated")));
        CHECK(json_integer_value(json_object_get(m, "tokens")) == p.tokens[s]);
        CHECK(json_integer_value(json_object_get(m, "full_tokens")) == p.full_tokens[s]);
        CHECK(json_integer_value(json_object_get(m, "budget")) == cut[i].budget);
    }
    /* a cut JSON section is a string with the marker; the source keeps head and tail */
    const char *tj = json_string_value(json_object_get(j, "task"));
    CHECKF(tj, "a cut task should be a string");
    CHECKSTR(tj, "[kforge: truncated, ");
    CHECKSTR(tj, "{\"name\": \"big\"");
    const char *ps = json_string_value(json_object_get(json_object_get(j, "parent"), "source"));
    CHECKSTR(ps, "/* FIRST LINE */\n");
    CHECKSTR(ps, "/* LAST LINE */\n");
    CHECKSTR(ps, "tokens omitted]\n");
    char expect[128];
    snprintf(expect, sizeof expect, "of %lld tokens omitted]", (long long)p.full_tokens[KF_PACK_PARENT]);
    CHECKSTR(ps, expect);
    CHECKSTR(p.prompt, "/* LAST LINE */");
    CHECKSTR(p.prompt, expect);
    /* cut at line ends: the line before the marker is whole */
    const char *mk = strstr(ps, "[kforge: truncated");
    CHECK(mk - ps > 19 && !strncmp(mk - 19, "padding padding */\n", 19));
    /* the multi-byte characters of the verdict survive the cut as valid UTF-8 (JSON
     * parsed above), the marker inside */
    CHECKSTR(json_string_value(json_object_get(j, "verdict")), "[kforge: truncated");

    /* failures: whole items while they fit, then a count of the rest */
    json_t *fa = json_object_get(j, "failures");
    json_t *fm = section_meta(j, "failures");
    size_t kept = json_array_size(fa);
    CHECKF(kept >= 1 && kept < 50, "%zu failures kept", kept);
    CHECK(json_integer_value(json_object_get(fm, "omitted_items")) == (json_int_t)(50 - kept));
    CHECK(p.tokens[KF_PACK_FAILURES] <= 300 && p.truncated[KF_PACK_FAILURES]);
    CHECK(p.full_tokens[KF_PACK_FAILURES] > 50 * 100);
    CHECK(json_integer_value(json_object_get(json_array_get(fa, 0), "id")) == 100);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(fa, 0), "reasons")), "wrong_result"));
    snprintf(expect, sizeof expect, "[kforge: truncated, %zu more failures omitted]", 50 - kept);
    CHECKSTR(p.prompt, expect);
    CHECKSTR(p.prompt, "- node 100 [wrong_result]: mmmm");
    /* constraints fit */
    json_t *ca = json_object_get(j, "constraints");
    CHECK(json_array_size(ca) == 2 && !strcmp(json_string_value(json_array_get(ca, 1)), cons[1]));
    CHECK(!p.truncated[KF_PACK_CONSTRAINTS]);
    CHECKSTR(p.prompt, "- BLOCK must divide 1024\n");

    json_decref(j);
    kf_pack_free(&p);

    /* the lessons slot renders like the other lists */
    const char *lessons[] = {"vectorise the inner loop first"};
    in = (kf_pack_in){0};
    in.lessons = lessons;
    in.nlessons = 1;
    CHECK(kf_pack_build(ctx, &in, &p) == KF_OK);
    CHECKSTR(p.prompt, "# Lessons\n- vectorise the inner loop first\n");
    CHECK(p.tokens[KF_PACK_LESSONS] == kf_text_tokens(strlen("- vectorise the inner loop first\n")));
    kf_pack_free(&p);

    /* a source with invalid UTF-8 and its own fences: still valid JSON, a longer fence */
    in = (kf_pack_in){0};
    in.parent_src = "/* caf\xe9 */\nconst char *s = \"```\";\n";
    CHECK(kf_pack_build(ctx, &in, &p) == KF_OK);
    j = json_loads(p.json, 0, &je);
    CHECKF(j, "pack JSON invalid: %s", je.text);
    CHECKSTR(p.prompt, "````c\n/* caf");
    json_decref(j);
    kf_pack_free(&p);

    kf_ctx_free(ctx);
    kf_buf_free(&task);
    kf_buf_free(&src);
    kf_buf_free(&verdict);
}

static void t_extract_code(const void *arg) {
    (void)arg;
    const char *s;
    size_t n;
    char why[200];
#define EXTRACT(text) kf_agent_extract_code((text), strlen(text), &s, &n, why, sizeof why)
    CHECK(EXTRACT("Here:\n```c\nint x;\n```\nDone.") == 0 && n == 7 && !strncmp(s, "int x;\n", n));
    CHECK(EXTRACT("```cuda\n__global__ void k() {}\n```") == 0 && !strncmp(s, "__global__", 10));
    CHECK(EXTRACT("```CPP\nA\n```") == 0 && !strncmp(s, "A\n", n));
    CHECK(EXTRACT("```\nuntagged;\n```") == 0 && !strncmp(s, "untagged;\n", n));
    /* another language's block first: skipped */
    CHECK(EXTRACT("Run:\n```bash\nmake\n```\nthen\n```c\nB;\n```\n") == 0 && !strncmp(s, "B;\n", n));
    /* the first of two c blocks; a longer fence holding ``` inside */
    CHECK(EXTRACT("```c\nfirst;\n```\n```c\nsecond;\n```") == 0 && !strncmp(s, "first;\n", n));
    CHECK(EXTRACT("````c\nx = \"```\";\n````\n") == 0 && !strncmp(s, "x = \"```\";\n", n));
    /* no fence but plainly code */
    CHECK(EXTRACT("\n#include <stdio.h>\nvoid f(void) { g(); }\n") == 0 && !strncmp(s, "#include", 8));
    CHECK(EXTRACT("I cannot help with that.") == -1);
    CHECKSTR(why, "no code block");
    CHECK(EXTRACT("```python\nprint(1)\n```") == -1);
    CHECKSTR(why, "other languages");
    CHECK(EXTRACT("```c\nint x;\n") == -1);
    CHECKSTR(why, "not closed");
#undef EXTRACT
}

/* ---- the cmd agent --------------------------------------------------------------------- */

typedef struct {
    kf_ctx *ctx;
    kf_pack pack;
    kf_agent_opts o;
    char dir[64];  /* the test's own scratch directory */
    char tmp[128]; /* the agent's temp root, inside dir: must end empty */
} cmdt;

static void cmdt_init(cmdt *t) {
    memset(t, 0, sizeof *t);
    t->ctx = kf_ctx_new();
    small_pack(&t->pack, "c");
    kf_agent_opts_init(&t->o);
    t->o.timeout_s = 20;
    snprintf(t->dir, sizeof t->dir, "/tmp/kft-agent-XXXXXX");
    CHECK(mkdtemp(t->dir));
    snprintf(t->tmp, sizeof t->tmp, "%s/tmp", t->dir);
    CHECK(mkdir(t->tmp, 0700) == 0);
    t->o.tmp_dir = t->tmp;
}

/* Run one command (its text may use %1$s for the scratch dir) and check that its
 * private directory is gone afterwards. */
static void cmdt_run(cmdt *t, const char *fmt, kf_proposal *out) {
    char cmd[2048], spec[2100];
    snprintf(cmd, sizeof cmd, fmt, t->dir);
    snprintf(spec, sizeof spec, "cmd:%s", cmd);
    kf_agent *a;
    CHECKF(kf_agent_new(t->ctx, spec, &t->o, &a) == KF_OK, "%s", kf_errmsg(t->ctx));
    CHECK(!strcmp(kf_agent_kind(a), "cmd"));
    kf_status st = kf_agent_propose(a, &t->pack, out);
    CHECKF(st == KF_OK, "propose: %s", kf_errmsg(t->ctx));
    kf_agent_free(a);
    CHECK(out->attempts == 1);
    CHECK((out->text != NULL) != (out->error != NULL));
    char ls[256];
    snprintf(cmd, sizeof cmd, "ls -A %s", t->tmp);
    CHECK(kft_run(cmd, ls, sizeof ls) == 0);
    CHECKF(ls[0] == 0, "left behind in the temp root: %s", ls);
}

static void cmdt_done(cmdt *t) {
    kf_pack_free(&t->pack);
    kf_ctx_free(t->ctx);
    kf__rmtree(t->dir);
}

/* A process is gone (or a zombie no one reaps yet). */
static int dead(pid_t pid) {
    for (int i = 0; i < 200; i++) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f) return 1;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *p = strrchr(buf, ')');
        if (p && (p[2] == 'Z' || p[2] == 'X')) return 1;
        usleep(10000);
    }
    return 0;
}

static pid_t read_pid(const char *dir, const char *name) {
    char path[256], buf[32] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    CHECKF(f, "no %s", path);
    CHECK(fgets(buf, sizeof buf, f));
    fclose(f);
    return (pid_t)atoi(buf);
}

static void t_cmd_candidate(const void *arg) {
    (void)arg;
    cmdt t;
    cmdt_init(&t);
    kf_proposal p;
    cmdt_run(&t, "printf 'void saxpy(void) {}\\n' > \"$KFORGE_OUT\"; echo to-stdout; echo to-stderr >&2", &p);
    CHECKF(p.text, "error: %s", p.error);
    CHECK(!strcmp(p.text, "void saxpy(void) {}\n") && p.len == 20 && !strcmp(p.ext, "c"));
    CHECK(!strcmp(p.category, "vectorisation"));
    CHECK(p.tokens_estimated && p.tokens_in == t.pack.tokens_prompt && p.tokens_out == 5);
    CHECKSTR(p.log, "to-stdout");
    CHECKSTR(p.log, "to-stderr");
    CHECK(p.elapsed_s > 0 && p.elapsed_s < 10);
    kf_proposal_free(&p);
    kf_proposal_free(&p);
    kf_proposal_free(NULL);

    /* the environment: the three files exist, hold the pack, and the command runs in
     * the private directory that holds them */
    cmdt_run(&t,
             "d=$(dirname \"$KFORGE_OUT\"); [ \"$(pwd)\" = \"$d\" ] || exit 9; "
             "[ \"$(dirname \"$KFORGE_PACK\")\" = \"$d\" ] || exit 10; "
             "[ \"$KFORGE_EXT\" = c ] || exit 11; [ \"${KFORGE_OUT##*.}\" = c ] || exit 12; "
             "[ -n \"$PATH\" ] || exit 13; "
             "{ cat \"$KFORGE_PACK\"; echo @@; cat \"$KFORGE_PROMPT\"; echo @@; "
             "cat \"$KFORGE_SYSTEM\"; } > \"$KFORGE_OUT\"",
             &p);
    CHECKF(p.text, "error: %s", p.error);
    char *a = p.text, *b = strstr(a, "@@\n");
    CHECK(b);
    *b = 0;
    char *c = strstr(b + 3, "@@\n");
    CHECK(c);
    *c = 0;
    CHECK(!strcmp(a, t.pack.json)); /* the pack files hold exactly the pack */
    CHECK(!strcmp(b + 3, t.pack.prompt));
    CHECK(!strcmp(c + 3, t.pack.system));
    kf_proposal_free(&p);

    /* usage.json is honoured; a malformed one falls back to the estimate */
    cmdt_run(&t,
             "printf 'x;' > \"$KFORGE_OUT\"; "
             "printf '{\"prompt_tokens\": 777, \"completion_tokens\": 55}' > \"$KFORGE_OUT.usage.json\"",
             &p);
    CHECKF(p.text, "error: %s", p.error);
    CHECK(!p.tokens_estimated && p.tokens_in == 777 && p.tokens_out == 55);
    kf_proposal_free(&p);
    cmdt_run(&t,
             "printf 'x;' > \"$KFORGE_OUT\"; printf '{\"prompt_tokens\": \"many\"}' > "
             "\"$KFORGE_OUT.usage.json\"",
             &p);
    CHECK(p.text && p.tokens_estimated && p.tokens_out == 1);
    kf_proposal_free(&p);

    /* a child left running after the command exits is killed with its group */
    cmdt_run(&t, "sleep 30 & echo $! > %1$s/bg.pid; printf 'y;' > \"$KFORGE_OUT\"", &p);
    CHECKF(p.text, "error: %s", p.error);
    CHECK(p.elapsed_s < 10);
    CHECKF(dead(read_pid(t.dir, "bg.pid")), "the background child survived");
    kf_proposal_free(&p);

    /* captured output is capped; the candidate still comes */
    t.o.log_cap = 1000;
    cmdt_run(&t, "head -c 300000 /dev/zero | tr '\\0' y; printf 'z;' > \"$KFORGE_OUT\"", &p);
    CHECKF(p.text, "error: %s", p.error);
    CHECKSTR(p.log, "[stdout: 300000 bytes, the head kept]");
    CHECK(strlen(p.log) < 1200);
    kf_proposal_free(&p);
    cmdt_done(&t);
}

static void t_cmd_failures(const void *arg) {
    (void)arg;
    cmdt t;
    cmdt_init(&t);
    kf_proposal p;

    cmdt_run(&t, "echo starting; echo 'line one' >&2; echo 'the model is not loaded' >&2; exit 3", &p);
    CHECK(!p.text);
    CHECKSTR(p.error, "cmd: exited with status 3; stderr: line one | the model is not loaded");
    CHECKSTR(p.log, "starting");
    CHECK(p.tokens_estimated && p.tokens_in == t.pack.tokens_prompt && p.tokens_out == 0);
    kf_proposal_free(&p);

    cmdt_run(&t, "exit 4", &p);
    CHECKSTR(p.error, "cmd: exited with status 4 (no stderr)");
    kf_proposal_free(&p);

    /* only the last lines of a long stderr */
    cmdt_run(&t, "i=0; while [ $i -lt 2000 ]; do echo \"noise $i\" >&2; i=$((i+1)); done; exit 1", &p);
    CHECKSTR(p.error, "noise 1995 | noise 1996 | noise 1997 | noise 1998 | noise 1999");
    CHECK(!strstr(p.error, "noise 1994") && strlen(p.error) < 300);
    kf_proposal_free(&p);

    cmdt_run(&t, "kill -9 $$", &p);
    CHECKSTR(p.error, "cmd: killed by signal 9");
    kf_proposal_free(&p);

    cmdt_run(&t, "true", &p);
    CHECKSTR(p.error, "cmd: exited 0 but wrote nothing to KFORGE_OUT");
    kf_proposal_free(&p);

    cmdt_run(&t, ": > \"$KFORGE_OUT\"", &p);
    CHECKSTR(p.error, "cmd: wrote an empty file to KFORGE_OUT");
    kf_proposal_free(&p);

    cmdt_run(&t, "mkdir \"$KFORGE_OUT\"", &p);
    CHECKSTR(p.error, "not a regular file");
    kf_proposal_free(&p);

    cmdt_run(&t, "printf 'a\\000b' > \"$KFORGE_OUT\"", &p);
    CHECKSTR(p.error, "not text (a NUL byte at offset 1)");
    kf_proposal_free(&p);

    t.o.out_cap = 1000;
    cmdt_run(&t, "head -c 5000 /dev/zero | tr '\\0' a > \"$KFORGE_OUT\"", &p);
    CHECKSTR(p.error, "cmd: wrote 5000 bytes to KFORGE_OUT, more than the cap of 1000");
    kf_proposal_free(&p);
    t.o.out_cap = 1u << 20;

    /* past its time: killed, with its children, within the deadline */
    t.o.timeout_s = 0.5;
    double t0 = now_s();
    cmdt_run(&t, "sleep 30 & echo $! > %1$s/child.pid; sleep 30; printf 'x;' > \"$KFORGE_OUT\"", &p);
    double el = now_s() - t0;
    CHECKSTR(p.error, "cmd: timed out after 0.5 s; its process group was killed");
    CHECKF(el >= 0.45 && el < 5, "took %.2f s", el);
    CHECKF(dead(read_pid(t.dir, "child.pid")), "the command's child survived the timeout");
    kf_proposal_free(&p);
    cmdt_done(&t);
}

static void t_agent_specs(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_agent *a = (kf_agent *)1;
    CHECK(kf_agent_new(ctx, "builtin", NULL, &a) == KF_EUSAGE && a == NULL);
    CHECKSTR(kf_errmsg(ctx), "expected cmd:'COMMAND' or openai:MODEL");
    CHECK(kf_agent_new(ctx, "cmd:", NULL, &a) == KF_EUSAGE);
    CHECKSTR(kf_errmsg(ctx), "empty command");
    CHECK(kf_agent_new(ctx, "cmd:''", NULL, &a) == KF_EUSAGE);
    CHECK(kf_agent_new(ctx, "openai:", NULL, &a) == KF_EUSAGE);
    CHECKSTR(kf_errmsg(ctx), "empty model");
    kf_agent_opts o;
    kf_agent_opts_init(&o);
    o.timeout_s = 0;
    CHECK(kf_agent_new(ctx, "cmd:true", &o, &a) == KF_EUSAGE);
    CHECKSTR(kf_errmsg(ctx), "must be positive");
    kf_agent_opts_init(&o);
    o.base_url = "ftp://example.com";
    CHECK(kf_agent_new(ctx, "openai:m", &o, &a) == KF_EUSAGE);
    CHECKSTR(kf_errmsg(ctx), "not http:// or https://");
    unsetenv("OPENAI_API_KEY");
    unsetenv("OPENAI_BASE_URL");
    CHECK(kf_agent_new(ctx, "openai:gpt-x", NULL, &a) == KF_EUSAGE);
    CHECKSTR(kf_errmsg(ctx), "no API key");
    setenv("OPENAI_API_KEY", "sk-env", 1);
    CHECK(kf_agent_new(ctx, "openai:gpt-x", NULL, &a) == KF_OK);
    CHECK(!strcmp(kf_agent_kind(a), "openai"));
    kf_agent_free(a);
    /* kforge's own failures are a status, not a proposal error */
    kf_agent_opts_init(&o);
    o.tmp_dir = "/nonexistent/kforge-test";
    CHECK(kf_agent_new(ctx, "cmd:true", &o, &a) == KF_OK);
    kf_pack pack;
    small_pack(&pack, "c");
    kf_proposal p;
    CHECK(kf_agent_propose(a, &pack, &p) == KF_EIO);
    CHECKSTR(kf_errmsg(ctx), "cannot make a directory in /nonexistent/kforge-test");
    CHECK(!p.text && !p.error && !p.log);
    kf_pack empty;
    memset(&empty, 0, sizeof empty);
    CHECK(kf_agent_propose(a, &empty, &p) == KF_EUSAGE);
    kf_pack_free(&pack);
    kf_agent_free(a);
    /* quotes around a command that reached us unparsed */
    CHECK(kf_agent_new(ctx, "cmd:'echo hi'", NULL, &a) == KF_OK);
    kf_agent_free(a);
    kf_agent_free(NULL);
    kf_ctx_free(ctx);
}

/* ---- the stub OpenAI server ----------------------------------------------------------- */

typedef enum {
    S_GOOD,
    S_429,
    S_500_TWICE,
    S_500_ALWAYS,
    S_GARBAGE,
    S_NOCODE,
    S_NOCONTENT,
    S_HUGE,
    S_HUGE_STREAM,
    S_SLOW,
    S_401,
    S_NOUSAGE,
    S_PARTS,
    S_BADUSAGE,
    S_429_LONG
} smode;

typedef struct {
    int fd, port;
    smode mode;
    atomic_int requests;
    char first[8192]; /* the first request, head and body (capped) */
    pthread_t th;
} stub;

static const char good_content[] =
    "Here is a faster kernel:\n```c\nvoid saxpy(float *y) { y[0] = 1; }\n```\nIt unrolls.";

static void reply(int fd, const char *status, const char *extra, const char *body) {
    char head[512];
    snprintf(head, sizeof head,
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s"
             "Connection: close\r\n\r\n",
             status, strlen(body), extra ? extra : "");
    kft_http_send_all(fd, head, strlen(head));
    kft_http_send_all(fd, body, strlen(body));
}

static char *completion(const char *content, int usage) {
    json_t *j = json_pack("{s:s, s:[{s:i, s:{s:s, s:s}, s:s}]}", "id", "chatcmpl-1", "choices", "index", 0,
                          "message", "role", "assistant", "content", content, "finish_reason", "stop");
    if (usage)
        json_object_set_new(
            j, "usage",
            json_pack("{s:i, s:i, s:i}", "prompt_tokens", 123, "completion_tokens", 45, "total_tokens", 168));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static void *stub_main(void *arg) {
    stub *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0) continue;
        char req[1 << 16];
        kft_http_read_request(c, req, sizeof req);
        int k = atomic_fetch_add(&s->requests, 1);
        if (k == 0) snprintf(s->first, sizeof s->first, "%s", req);
        char *good = completion(good_content, 1);
        switch (s->mode) {
        case S_GOOD: reply(c, "200 OK", NULL, good); break;
        case S_BADUSAGE:
            reply(c, "200 OK", NULL,
                  "{\"choices\": [{\"message\": {\"content\": \"```c\\nint y;\\n```\"}}], \"usage\": "
                  "{\"prompt_tokens\": -5, \"completion_tokens\": 9223372036854775807}}");
            break;
        case S_429_LONG: /* a server asking for a wait far past the proposal's deadline */
            reply(c, "429 Too Many Requests", "Retry-After: 100000\r\n",
                  "{\"error\": {\"message\": \"Rate limit reached for requests\"}}");
            break;
        case S_NOUSAGE: {
            char *b = completion(good_content, 0);
            reply(c, "200 OK", NULL, b);
            free(b);
            break;
        }
        case S_429:
            if (k == 0)
                reply(c, "429 Too Many Requests", "Retry-After: 1\r\n",
                      "{\"error\": {\"message\": \"Rate limit reached for requests\"}}");
            else reply(c, "200 OK", NULL, good);
            break;
        case S_500_TWICE:
        case S_500_ALWAYS:
            if (k < 2 || s->mode == S_500_ALWAYS)
                reply(c, "500 Internal Server Error", NULL, "{\"error\": \"the GPU fell over\"}");
            else reply(c, "200 OK", NULL, good);
            break;
        case S_GARBAGE: reply(c, "200 OK", NULL, "<html>this is not json{"); break;
        case S_NOCODE: {
            char *b = completion("I cannot help with that.", 1);
            reply(c, "200 OK", NULL, b);
            free(b);
            break;
        }
        case S_NOCONTENT:
            reply(c, "200 OK", NULL,
                  "{\"id\": \"x\", \"choices\": [], \"error\": {\"message\": \"model overloaded\"}}");
            break;
        case S_PARTS:
            reply(c, "200 OK", NULL,
                  "{\"choices\": [{\"message\": {\"content\": [{\"type\": \"text\", \"text\": "
                  "\"```c\\nint \"}, {\"type\": \"text\", \"text\": \"y;\\n```\"}]}}]}");
            break;
        case S_HUGE:
        case S_HUGE_STREAM: {
            size_t n = 5u << 20;
            char *b = malloc(n + 1);
            memset(b, 'x', n);
            b[n] = 0;
            if (s->mode == S_HUGE) {
                reply(c, "200 OK", NULL, b);
            } else { /* no Content-Length: the body runs to the close */
                const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Connection: close\r\n\r\n";
                kft_http_send_all(c, h, strlen(h));
                kft_http_send_all(c, b, n);
            }
            free(b);
            break;
        }
        case S_SLOW:
            sleep(3);
            reply(c, "200 OK", NULL, good);
            break;
        case S_401:
            reply(c, "401 Unauthorized", NULL,
                  "{\"error\": {\"message\": \"Incorrect API key provided.\", \"type\": "
                  "\"invalid_request_error\"}}");
            break;
        }
        free(good);
        close(c);
    }
    return NULL;
}

static void stub_start(stub *s, smode mode) {
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(s->fd >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(s->fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(s->fd, 16) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(s->fd, (struct sockaddr *)&a, &len) == 0);
    s->port = ntohs(a.sin_port);
    CHECK(pthread_create(&s->th, NULL, stub_main, s) == 0);
    pthread_detach(s->th);
}

typedef struct {
    smode mode;
    int dead; /* a closed port instead of the stub */
} ocase;

/* Ask the stub once; return the elapsed seconds. */
static double ask(stub *s, const ocase *c, kf_agent_opts *o, kf_proposal *p, char *base, size_t nbase) {
    kft_http_no_proxy(); /* the stub is local: no proxy may intercept it */
    int port;
    if (c->dead) {
        port = kft_http_dead_port();
    } else {
        stub_start(s, c->mode);
        port = s->port;
    }
    snprintf(base, nbase, "http://127.0.0.1:%d/v1", port);
    o->base_url = base;
    o->api_key = "sk-test-SECRET-123";
    kf_ctx *ctx = kf_ctx_new();
    kf_agent *a;
    CHECKF(kf_agent_new(ctx, "openai:gpt-test", o, &a) == KF_OK, "%s", kf_errmsg(ctx));
    kf_pack pack;
    small_pack(&pack, "c");
    double t0 = now_s();
    kf_status st = kf_agent_propose(a, &pack, p);
    double el = now_s() - t0;
    CHECKF(st == KF_OK, "propose: %s", kf_errmsg(ctx));
    CHECK((p->text != NULL) != (p->error != NULL));
    if (p->error) CHECKF(!strstr(p->error, "SECRET"), "the key leaked: %s", p->error);
    if (p->log) CHECK(!strstr(p->log, "SECRET"));
    CHECK(p->elapsed_s > 0 && p->elapsed_s <= el + 0.01);
    kf_pack_free(&pack);
    kf_agent_free(a);
    kf_ctx_free(ctx);
    return el;
}

static void fast_opts(kf_agent_opts *o) {
    kf_agent_opts_init(o);
    o->timeout_s = 5;
    o->connect_timeout_s = 2;
    o->backoff_s = 0.05;
    o->max_attempts = 3;
}

static void t_openai_good(const void *arg) {
    (void)arg;
    static stub s;
    kf_agent_opts o;
    fast_opts(&o);
    o.temperature = 0.2;
    o.max_tokens = 900;
    kf_proposal p;
    char base[128];
    ocase c = {S_GOOD, 0};
    double el = ask(&s, &c, &o, &p, base, sizeof base);
    CHECKF(p.text, "error: %s", p.error);
    CHECK(!strcmp(p.text, "void saxpy(float *y) { y[0] = 1; }\n"));
    CHECK(p.len == strlen(p.text) && !strcmp(p.ext, "c"));
    CHECK(p.tokens_in == 123 && p.tokens_out == 45 && !p.tokens_estimated);
    CHECK(p.attempts == 1 && atomic_load(&s.requests) == 1);
    CHECK(!strcmp(p.log, good_content));
    CHECK(el < 3);
    /* what the server saw: the path, the key, the model, both messages, the options */
    CHECKSTR(s.first, "POST /v1/chat/completions HTTP/1.1");
    CHECKSTR(s.first, "Authorization: Bearer sk-test-SECRET-123");
    CHECKSTR(s.first, "\"model\":\"gpt-test\"");
    CHECKSTR(s.first, "\"role\":\"system\"");
    CHECKSTR(s.first, "\"role\":\"user\"");
    CHECKSTR(s.first, "The kernel to improve (node 7)");
    CHECKSTR(s.first, "\"max_tokens\":900");
    CHECKSTR(s.first, "\"temperature\":0.2");
    kf_proposal_free(&p);

    /* no usage in the reply: estimated */
    static stub s2;
    c.mode = S_NOUSAGE;
    ask(&s2, &c, &o, &p, base, sizeof base);
    CHECK(p.text && p.tokens_estimated && p.tokens_in > 0 &&
          p.tokens_out == kf_text_tokens(strlen(good_content)));
    kf_proposal_free(&p);
}

static void t_openai_retries(const void *arg) {
    (void)arg;
    kf_agent_opts o;
    fast_opts(&o);
    kf_proposal p;
    char base[128];

    /* 429 with Retry-After: 1 -> waits about a second (not the 0.05 s backoff) */
    static stub s1;
    ocase c = {S_429, 0};
    double el = ask(&s1, &c, &o, &p, base, sizeof base);
    CHECKF(p.text, "error: %s", p.error);
    CHECK(p.attempts == 2 && atomic_load(&s1.requests) == 2);
    CHECK(p.tokens_in == 123 && p.tokens_out == 45);
    CHECKF(el >= 0.95 && el < 4, "took %.2f s", el);
    kf_proposal_free(&p);

    /* Retry-After far past the agent timeout: not waited for; the proposal ends by its
     * deadline with the server's answer */
    static stub s0;
    c.mode = S_429_LONG;
    o.timeout_s = 2;
    el = ask(&s0, &c, &o, &p, base, sizeof base);
    CHECK(!p.text && p.attempts == 1 && atomic_load(&s0.requests) == 1);
    CHECKSTR(p.error, "HTTP 429");
    CHECKSTR(p.error,
             "Rate limit reached for requests; gave up after 1 attempt: the next one, after a wait of "
             "60 s (Retry-After), would end past the agent timeout of 2 s");
    CHECKF(el < 2.5, "took %.2f s", el);
    kf_proposal_free(&p);
    /* retries within the deadline: 500s after waits of 0.5-1 s, never past 2.2 s */
    static stub s0b;
    c.mode = S_500_ALWAYS;
    o.backoff_s = 1;
    o.max_attempts = 10;
    el = ask(&s0b, &c, &o, &p, base, sizeof base);
    CHECK(!p.text && p.attempts >= 2 && p.attempts < 10);
    CHECKSTR(p.error, "would end past the agent timeout of 2 s");
    CHECKF(el < 2.2, "took %.2f s", el);
    kf_proposal_free(&p);
    fast_opts(&o);

    /* 500 twice, then good: three attempts, short backoffs */
    static stub s2;
    c.mode = S_500_TWICE;
    el = ask(&s2, &c, &o, &p, base, sizeof base);
    CHECKF(p.text, "error: %s", p.error);
    CHECK(p.attempts == 3 && atomic_load(&s2.requests) == 3);
    CHECKF(el >= 0.05 && el < 3, "took %.2f s", el);
    kf_proposal_free(&p);

    /* 500 always: gives up after max_attempts, with the server's message */
    static stub s3;
    c.mode = S_500_ALWAYS;
    o.max_attempts = 2;
    ask(&s3, &c, &o, &p, base, sizeof base);
    char want[256];
    snprintf(want, sizeof want,
             "openai: HTTP 500 from %s/chat/completions: the GPU fell over; gave up after 2 attempts", base);
    CHECKSTR(p.error, want);
    CHECK(p.attempts == 2 && atomic_load(&s3.requests) == 2);
    kf_proposal_free(&p);

    /* 401: not retried; the server's message, not the key */
    static stub s4;
    c.mode = S_401;
    o.max_attempts = 3;
    ask(&s4, &c, &o, &p, base, sizeof base);
    snprintf(want, sizeof want, "openai: HTTP 401 from %s/chat/completions: Incorrect API key provided.",
             base);
    CHECKSTR(p.error, want);
    CHECK(p.attempts == 1 && atomic_load(&s4.requests) == 1);
    kf_proposal_free(&p);

    /* a dead endpoint: every attempt refused, quickly */
    c.dead = 1;
    el = ask(NULL, &c, &o, &p, base, sizeof base);
    snprintf(want, sizeof want, "openai: cannot connect to %s (Connection refused); gave up after 3 attempts",
             base);
    CHECKSTR(p.error, want);
    CHECK(p.attempts == 3);
    CHECKF(el < 3, "took %.2f s", el);
    kf_proposal_free(&p);
}

static void t_openai_bad_replies(const void *arg) {
    (void)arg;
    kf_agent_opts o;
    fast_opts(&o);
    kf_proposal p;
    char base[128];
    ocase c = {S_GARBAGE, 0};

    static stub s1;
    ask(&s1, &c, &o, &p, base, sizeof base);
    CHECKSTR(p.error, "is not JSON");
    CHECKSTR(p.error, "it begins '<html>this is not json{'");
    CHECK(p.attempts == 1);
    kf_proposal_free(&p);

    static stub s2;
    c.mode = S_NOCODE;
    ask(&s2, &c, &o, &p, base, sizeof base);
    CHECKSTR(p.error, "openai: the reply has no code block and does not look like code");
    CHECK(!strcmp(p.log, "I cannot help with that."));
    CHECK(p.tokens_in == 123 && p.tokens_out == 45); /* spent all the same */
    kf_proposal_free(&p);

    static stub s3;
    c.mode = S_NOCONTENT;
    ask(&s3, &c, &o, &p, base, sizeof base);
    CHECKSTR(p.error, "openai: the reply has no choices[0].message.content: model overloaded");
    kf_proposal_free(&p);

    /* content as an array of text parts */
    static stub s7;
    c.mode = S_PARTS;
    ask(&s7, &c, &o, &p, base, sizeof base);
    CHECKF(p.text && !strcmp(p.text, "int y;\n"), "%s", p.error ? p.error : p.text);
    kf_proposal_free(&p);

    /* too big, announced (Content-Length) and streamed (no length): both refused at the
     * cap, with nothing like 5 MiB held */
    static stub s4, s5;
    c.mode = S_HUGE;
    o.reply_cap = 1u << 20;
    ask(&s4, &c, &o, &p, base, sizeof base);
    CHECKSTR(p.error, "is larger than the cap of 1048576 bytes");
    CHECK(p.attempts == 1);
    kf_proposal_free(&p);
    c.mode = S_HUGE_STREAM;
    ask(&s5, &c, &o, &p, base, sizeof base);
    CHECKSTR(p.error, "is larger than the cap of 1048576 bytes");
    kf_proposal_free(&p);

    /* too slow: one timed-out request, not retried */
    static stub s6;
    c.mode = S_SLOW;
    o.timeout_s = 0.5;
    double el = ask(&s6, &c, &o, &p, base, sizeof base);
    char want[256];
    snprintf(want, sizeof want, "openai: no complete reply from %s/chat/completions within 0.5 s (timed out)",
             base);
    CHECKSTR(p.error, want);
    CHECK(p.attempts == 1);
    CHECKF(el >= 0.45 && el < 2.9, "took %.2f s", el); /* the stub answers at 3 s */
    kf_proposal_free(&p);
}

/* Token counts an agent reports are input: a negative, huge or non-integer count is
 * not trusted (the estimate counts, with a warning), from a command and an endpoint. */
static void t_token_counts(const void *arg) {
    (void)arg;
    cmdt t;
    cmdt_init(&t);
    kf_proposal p;
    static const char *const bad[] = {
        "{\"prompt_tokens\": 9223372036854775807, \"completion_tokens\": 1}",
        "{\"prompt_tokens\": 10, \"completion_tokens\": -3}",
        "{\"prompt_tokens\": 1.5e30, \"completion_tokens\": 2}",
        "{\"prompt_tokens\": 1000000001, \"completion_tokens\": 2}",
        "[1, 2]",
    };
    static const char *const said[] = {
        "prompt_tokens 9223372036854775807 (outside [0, 1000000000])", "completion_tokens -3 (outside",
        "(not an integer)", "prompt_tokens 1000000001 (outside", "prompt_tokens null (not an integer)"};
    for (int i = 0; i < 5; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "printf 'x;' > \"$KFORGE_OUT\"; echo '%s' > \"$KFORGE_OUT.usage.json\"",
                 bad[i]);
        cmdt_run(&t, cmd, &p);
        CHECKF(p.text, "error: %s", p.error);
        CHECKF(p.tokens_estimated && p.tokens_in == t.pack.tokens_prompt && p.tokens_out == 1,
               "%s: %lld in, %lld out", bad[i], (long long)p.tokens_in, (long long)p.tokens_out);
        CHECKF(p.warning && strstr(p.warning, said[i]) && strstr(p.warning, "not trusted"), "%s: %s", bad[i],
               p.warning ? p.warning : "no warning");
        kf_proposal_free(&p);
    }
    /* the largest trusted count is taken as it is */
    cmdt_run(
        &t,
        "printf 'x;' > \"$KFORGE_OUT\"; "
        "printf '{\"prompt_tokens\": 1000000000, \"completion_tokens\": 0}' > \"$KFORGE_OUT.usage.json\"",
        &p);
    CHECK(!p.tokens_estimated && p.tokens_in == 1000000000 && p.tokens_out == 0 && !p.warning);
    kf_proposal_free(&p);
    cmdt_done(&t);

    static stub s;
    kf_agent_opts o;
    fast_opts(&o);
    char base[128];
    ocase c = {S_BADUSAGE, 0};
    ask(&s, &c, &o, &p, base, sizeof base);
    CHECKF(p.text, "error: %s", p.error);
    CHECKF(p.tokens_estimated && p.tokens_in > 0 && p.tokens_in < 100000 && p.tokens_out >= 0 &&
               p.tokens_out < 100,
           "%lld in, %lld out", (long long)p.tokens_in, (long long)p.tokens_out);
    CHECKSTR(p.warning, "openai: the endpoint reported prompt_tokens -5 (outside [0, 1000000000]) and "
                        "completion_tokens 9223372036854775807 (outside");
    kf_proposal_free(&p);
    CHECK(kf__sat_add(INT64_MAX, 1) == INT64_MAX && kf__sat_add(INT64_MIN, -1) == INT64_MIN &&
          kf__sat_add(40, 2) == 42);
}

void kft_register_agent(void) {
    kft_add("agent/pack_tokens", t_pack_tokens, NULL, 10);
    kft_add("agent/pack_fits", t_pack_fits, NULL, 10);
    kft_add("agent/pack_truncates", t_pack_truncates, NULL, 10);
    kft_add("agent/extract_code", t_extract_code, NULL, 10);
    kft_add("agent/specs", t_agent_specs, NULL, 10);
    kft_add("agent/cmd_candidate", t_cmd_candidate, NULL, 60);
    kft_add("agent/cmd_failures", t_cmd_failures, NULL, 60);
    kft_add("agent/openai_good", t_openai_good, NULL, 30);
    kft_add("agent/openai_retries", t_openai_retries, NULL, 30);
    kft_add("agent/openai_bad_replies", t_openai_bad_replies, NULL, 30);
    kft_add("agent/token_counts", t_token_counts, NULL, 60);
}
