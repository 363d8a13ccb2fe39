/*
 * test_run_agents.c - kforge run driven by agents, and tool mode (docs/agents.md).
 *
 * A scripted cmd agent (a shell script that copies the bundled fast saxpy to KFORGE_OUT,
 * keeps every pack it was given and reports its usage) drives `kforge run --agent cmd:`;
 * a failing command and a dead endpoint leave recorded no_candidate nodes and a run that
 * stops cleanly; an openai agent talks to a stub server in a thread of the test
 * (127.0.0.1 only); `kforge next` and `kforge submit` drive a run from outside.
 */
#define _GNU_SOURCE
#include "kft.h"
#include "kft_http.h"

#include "store/store.h"
#include "util/util.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char quick[] = "--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1";

static int cli(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static char *slurp(const char *path) {
    char *t = NULL;
    size_t n;
    return kf__read_file(path, 16u << 20, &t, &n) ? NULL : t;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(text, f);
    fclose(f);
}

/* The run's nodes as kforge tree --json gives them (caller decrefs). */
static json_t *tree(const char *run) {
    char args[512], out[1 << 17];
    snprintf(args, sizeof args, "tree %s --json", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(j, "%s", out);
    return j;
}

static const char *sget(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int passed(const char *state) {
    return !strcmp(state, "kept") || !strcmp(state, "reverted") || !strcmp(state, "measured");
}

/* ---- cmd ------------------------------------------------------------------------------ */

/* Two evaluations by a scripted agent: nodes from proposer cmd, checked and timed, its
 * reported tokens on every node, the parent's source in each pack it was given; a
 * resume without --agent goes on with the run's own agent; --tokens stops the run. */
static void t_cmd_run(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-ra-XXXXXX", path[512], args[2048], out[1 << 16], script[2048];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/packs", dir);
    CHECK(kf__mkdirs(path) == 0);
    snprintf(
        script, sizeof script,
        "n=$(ls %s/packs | wc -l)\n"
        "cp \"$KFORGE_PACK\" %s/packs/pack-$n.json\n"
        "{ grep -q '\"category\": *\"specialisation\"' \"$KFORGE_PACK\" && echo '/* kforge:when n > 0 */'; "
        "cat %s; } > \"$KFORGE_OUT\"\n"
        "echo '{\"prompt_tokens\": 100, \"completion_tokens\": 20}' > \"$KFORGE_OUT.usage.json\"\n",
        dir, dir, kft_src("tasks/c/saxpy/candidates/fast.c"));
    snprintf(path, sizeof path, "%s/agent.sh", dir);
    write_text(path, script);
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 2 --seed 1 --run %s/r --agent 'cmd:sh %s' --json %s", dir, path,
             quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *sum = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(sum, "evaluations")) == 2, "%s", out);
    CHECKF(json_integer_value(json_object_get(sum, "tokens")) == 240, "%s", out);
    json_decref(sum);

    char run[512];
    snprintf(run, sizeof run, "%s/r", dir);
    json_t *t = tree(run);
    json_t *nodes = json_object_get(t, "nodes");
    CHECKF(json_array_size(nodes) == 2, "%zu nodes", json_array_size(nodes));
    for (size_t i = 0; i < 2; i++) {
        json_t *n = json_array_get(nodes, i);
        CHECK(!strcmp(sget(n, "proposer"), "cmd"));
        CHECKF(passed(sget(n, "state")), "node %zu: %s", i, sget(n, "state"));
        CHECK(json_array_size(json_object_get(n, "shapes")) == 2);
    }
    json_decref(t);

    /* tokens on the nodes; the pack of each proposal held its parent's source */
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    CHECK(kf_store_open(ctx, run, NULL, &st) == KF_OK);
    char *ref = slurp(kft_src("tasks/c/saxpy/reference.c"));
    CHECK(ref);
    for (int i = 0; i < 2; i++) {
        kf_node n;
        CHECK(kf_store_get_node(st, i + 1, &n) == KF_OK);
        CHECK(n.tokens_in == 100 && n.tokens_out == 20);
        snprintf(path, sizeof path, "%s/packs/pack-%d.json", dir, i);
        char *ptxt = slurp(path);
        CHECKF(ptxt, "%s missing", path);
        json_t *pk = json_loads(ptxt, 0, NULL);
        json_t *par = json_object_get(pk, "parent");
        int64_t pid = json_integer_value(json_object_get(par, "id"));
        CHECK(pid == n.parent);
        const char *src = sget(par, "source");
        if (pid == 0) {
            CHECKF(!strcmp(src, ref), "the root's pack does not hold the reference: %.200s", src);
        } else {
            kf_node p;
            CHECK(kf_store_get_node(st, pid, &p) == KF_OK);
            char *ptext = NULL;
            size_t plen;
            CHECK(kf_store_read_source(st, p.src_hash, p.ext, &ptext, &plen) == KF_OK);
            CHECK(!strcmp(src, ptext));
            free(ptext);
            kf_node_free(&p);
        }
        CHECK(json_object_get(pk, "category") && json_is_string(json_object_get(pk, "category")));
        json_decref(pk);
        free(ptxt);
        kf_node_free(&n);
    }
    free(ref);
    /* the config remembers the agent, never anything else of the environment */
    CHECK(kf_store_config(st) && strstr(kf_store_config(st), "cmd:sh "));
    kf_store_close(st);
    kf_ctx_free(ctx);

    /* resume without --agent: the run's own agent goes on */
    snprintf(args, sizeof args, "run --resume %s --budget 3 --json %s", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    t = tree(run);
    nodes = json_object_get(t, "nodes");
    CHECKF(json_array_size(nodes) == 3 && !strcmp(sget(json_array_get(nodes, 2), "proposer"), "cmd"),
           "%zu nodes", json_array_size(nodes));
    json_decref(t);
    /* 360 tokens recorded: a token budget of 300 is spent before anything is asked */
    snprintf(args, sizeof args, "run --resume %s --budget 10 --tokens 300 --json %s", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(strstr(out, "token budget spent") && strstr(out, "\"tokens\":360"), "%s", out);
    t = tree(run);
    CHECK(json_array_size(json_object_get(t, "nodes")) == 3);
    json_decref(t);
    kf__rmtree(dir);
}

/* --jobs 2 with an agent: the agent is asked one proposal at a time by the main thread
 * while the evaluations of earlier ones run; with --with-builtin the builtin's too.
 * Exactly the budget, every node finished, an intact store, timed phases one at a time. */
static void t_cmd_jobs(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-raj-XXXXXX", path[512], args[2048], out[1 << 16], script[1024];
    CHECK(mkdtemp(dir));
    /* it follows the category: a specialisation (of the whole domain) when asked for one */
    snprintf(
        script, sizeof script,
        "{ grep -q '\"category\": *\"specialisation\"' \"$KFORGE_PACK\" && echo '/* kforge:when n > 0 */'; "
        "cat %s; } > \"$KFORGE_OUT\"\n",
        kft_src("tasks/c/saxpy/candidates/fast.c"));
    snprintf(path, sizeof path, "%s/agent.sh", dir);
    write_text(path, script);
    for (int builtin = 0; builtin < 2; builtin++) {
        snprintf(args, sizeof args,
                 "run tasks/c/saxpy --budget 4 --seed 1 --jobs 2 --run %s/r%d --agent 'cmd:sh %s'%s "
                 "--json %s 2>/dev/null",
                 dir, builtin, path, builtin ? " --with-builtin" : "", quick);
        CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
        json_t *sum = json_loads(out, 0, NULL);
        CHECKF(json_integer_value(json_object_get(sum, "evaluations")) == 4, "%s", out);
        CHECKF(json_integer_value(json_object_get(sum, "max_concurrent_timing")) == 1, "%s", out);
        json_decref(sum);
        char run[600];
        snprintf(run, sizeof run, "%s/r%d", dir, builtin);
        json_t *t = tree(run);
        json_t *nodes = json_object_get(t, "nodes");
        CHECKF(json_array_size(nodes) == 4, "%zu nodes", json_array_size(nodes));
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n) {
            CHECKF(passed(sget(n, "state")), "node %zu: %s", i, sget(n, "state"));
            if (!builtin) CHECK(!strcmp(sget(n, "proposer"), "cmd"));
        }
        json_decref(t);
        kf_ctx *ctx = kf_ctx_new();
        kf_store *st = NULL;
        CHECK(kf_store_open(ctx, run, NULL, &st) == KF_OK);
        CHECK(kf_store_check(st) == KF_OK);
        kf_store_close(st);
        kf_ctx_free(ctx);
    }
    kf__rmtree(dir);
}

/* A command that fails: each proposal is a recorded no_candidate node with the
 * command's error, none counts as an evaluation, and three in a row stop the run
 * cleanly with the reason. */
static void t_cmd_fails(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-ra-XXXXXX", args[1024], out[1 << 16], run[256];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 5 --run %s --agent 'cmd:echo no model here >&2; exit 3' --json %s "
             "2>/dev/null",
             run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *sum = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(sum, "evaluations")) == 0, "%s", out);
    CHECKF(strstr(sget(sum, "stopped"), "no candidate 3 times in a row") &&
               strstr(sget(sum, "stopped"), "exited with status 3"),
           "%s", out);
    json_decref(sum);
    json_t *t = tree(run);
    json_t *nodes = json_object_get(t, "nodes");
    CHECKF(json_array_size(nodes) == 3, "%zu nodes", json_array_size(nodes));
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        CHECK(!strcmp(sget(n, "state"), "no_candidate") && !strcmp(sget(n, "proposer"), "cmd"));
        CHECK(!strcmp(sget(n, "reasons"), "no_candidate"));
        CHECKF(strstr(sget(n, "note"), "exited with status 3") && strstr(sget(n, "note"), "no model here"),
               "%s", sget(n, "note"));
    }
    json_decref(t);
    /* no agent was given a node without a candidate as a parent */
    snprintf(args, sizeof args, "submit %s --parent 1 %s 2>&1", run,
             kft_src("tasks/c/saxpy/candidates/fast.c"));
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "no_candidate"), "%s", out);
    kf__rmtree(dir);
}

/* ---- openai, against a stub ---------------------------------------------------------- */

/* The stub's reply to every request: a completion whose content is the arg. */
static char *answer(kft_http *s, const char *request, char *status, size_t nstatus) {
    (void)request;
    (void)status;
    (void)nstatus;
    json_t *j = json_pack("{s:s, s:[{s:i, s:{s:s, s:s}, s:s}], s:{s:i, s:i}}", "id", "chatcmpl-1", "choices",
                          "index", 0, "message", "role", "assistant", "content", (const char *)s->arg,
                          "finish_reason", "stop", "usage", "prompt_tokens", 1234, "completion_tokens", 56);
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return body;
}

/* A model that answers with the fast saxpy in a fenced block: a node from proposer
 * openai, evaluated, with the reply's token counts; the key is sent to the server and
 * recorded nowhere (only the name of its variable is). */
static void t_openai_run(const void *arg) {
    (void)arg;
    static kft_http s;
    kft_http_no_proxy();
    char *fast = slurp(kft_src("tasks/c/saxpy/candidates/fast.c"));
    CHECK(fast);
    static char content[16384]; /* the server thread outlives this test */
    snprintf(content, sizeof content, "Vectorised:\n```c\n%s```\nDone.", fast);
    free(fast);
    kft_http_start(&s, answer, content);
    setenv("KFT_RA_KEY", "sk-test-SECRET-789", 1);
    char dir[] = "/tmp/kft-ra-XXXXXX", args[1024], out[1 << 16], run[256];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(
        args, sizeof args,
        "run tasks/c/saxpy --budget 1 --run %s --agent openai:test-model --base-url http://127.0.0.1:%d/v1 "
        "--api-key-env KFT_RA_KEY --agent-timeout 20 --json %s",
        run, s.port, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(strstr(out, "\"evaluations\":1") && strstr(out, "\"tokens\":1290"), "%s", out);
    CHECK(atomic_load(&s.requests) == 1);
    CHECKF(strstr(s.first, "Bearer sk-test-SECRET-789") && strstr(s.first, "test-model") &&
               strstr(s.first, "void saxpy"),
           "%.500s", s.first);
    json_t *t = tree(run);
    json_t *n = json_array_get(json_object_get(t, "nodes"), 0);
    CHECKF(n && !strcmp(sget(n, "proposer"), "openai") && passed(sget(n, "state")), "%s %s",
           sget(n, "proposer"), sget(n, "state"));
    json_decref(t);
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    CHECK(kf_store_open(ctx, run, NULL, &st) == KF_OK);
    kf_node node;
    CHECK(kf_store_get_node(st, 1, &node) == KF_OK);
    CHECK(node.tokens_in == 1234 && node.tokens_out == 56);
    kf_node_free(&node);
    const char *cfg = kf_store_config(st);
    CHECKF(cfg && strstr(cfg, "KFT_RA_KEY") && !strstr(cfg, "SECRET"), "%s", cfg ? cfg : "(none)");
    kf_store_close(st);
    kf_ctx_free(ctx);
    /* nothing in the run directory holds the key */
    snprintf(args, sizeof args, "grep -rl SECRET %s", dir);
    CHECK(kft_run(args, out, sizeof out) == 1);
    kf__rmtree(dir);
}

/* A dead endpoint: recorded no_candidate nodes whose note says what failed, a clear
 * message, a run that stops. */
static void t_openai_dead(const void *arg) {
    (void)arg;
    kft_http_no_proxy();
    int port = kft_http_dead_port(); /* nothing listens there */
    char dir[] = "/tmp/kft-ra-XXXXXX", args[1024], out[1 << 16], run[256];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(
        args, sizeof args,
        "run tasks/c/saxpy --budget 3 --run %s --agent openai:m --base-url http://127.0.0.1:%d/v1 %s 2>&1",
        run, port, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(strstr(out, "cannot connect") && strstr(out, "no candidate 3 times in a row"), "%s", out);
    json_t *t = tree(run);
    json_t *nodes = json_object_get(t, "nodes");
    CHECKF(json_array_size(nodes) == 3, "%zu nodes", json_array_size(nodes));
    json_t *n = json_array_get(nodes, 0);
    CHECK(!strcmp(sget(n, "state"), "no_candidate") && !strcmp(sget(n, "proposer"), "openai"));
    CHECKF(strstr(sget(n, "note"), "cannot connect to http://127.0.0.1"), "%s", sget(n, "note"));
    json_decref(t);
    kf__rmtree(dir);
}

/* ---- tool mode ------------------------------------------------------------------------- */

/* An empty run, next twice (two different pending actions), submit a good file (it
 * passes and is recorded as proposer tool), a wrong one (rejected with its reason and
 * message, exit 1), and to an unknown parent (exit 2, nothing recorded). */
static void t_tool(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-ra-XXXXXX", args[1024], out[1 << 17], run[256], wrong[512];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s %s 2>&1", run,
             quick); /* the run's check settings: submit may not lower them */
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "next %s --json", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *a1 = json_loads(out, 0, NULL);
    CHECKF(a1, "%s", out);
    CHECK(json_integer_value(json_object_get(a1, "parent")) == 0);
    CHECK(json_integer_value(json_object_get(a1, "pending")) > 0);
    json_t *pk = json_object_get(a1, "pack");
    CHECK(json_integer_value(json_object_get(json_object_get(pk, "parent"), "id")) == 0);
    CHECK(strstr(sget(json_object_get(pk, "parent"), "source"), "void saxpy"));
    CHECK(strstr(sget(a1, "prompt"), "void saxpy") && strstr(sget(a1, "submit"), "kforge submit"));
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *a2 = json_loads(out, 0, NULL);
    CHECK(a2);
    CHECKF(strcmp(sget(a1, "category"), sget(a2, "category")) ||
               json_integer_value(json_object_get(a1, "parent")) !=
                   json_integer_value(json_object_get(a2, "parent")),
           "two pending actions alike: %s", sget(a1, "category"));
    /* the text form says the same */
    snprintf(args, sizeof args, "next %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "pending action") &&
               strstr(out, "---- prompt ----"),
           "%s", out);

    /* a good file for the first action: passes, recorded, answers the pending action */
    snprintf(args, sizeof args, "submit %s --parent 0 %s --json %s", run,
             kft_src("tasks/c/saxpy/candidates/fast.c"), quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *s1 = json_loads(out, 0, NULL);
    CHECKF(s1 && passed(sget(s1, "state")) && !strcmp(sget(s1, "proposer"), "tool"), "%s", out);
    CHECK(json_array_size(json_object_get(s1, "shapes")) == 2);
    CHECK(!strcmp(sget(s1, "category"), sget(a1, "category")));
    CHECK(json_integer_value(json_object_get(s1, "pending")) ==
          json_integer_value(json_object_get(a1, "pending")));
    int64_t good = json_integer_value(json_object_get(s1, "id"));

    /* a wrong kernel under it: rejected with the checker's reason and message */
    snprintf(wrong, sizeof wrong, "%s/wrong.c", dir);
    write_text(wrong, "#include <stdint.h>\n"
                      "void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {\n"
                      "    for (int64_t i = 0; i < n; i++) z[i] = a * x[i];\n}\n");
    snprintf(args, sizeof args, "submit %s --parent %lld %s --category tiling --json %s", run,
             (long long)good, wrong, quick);
    CHECKF(cli(args, out, sizeof out) == 1, "%s", out);
    json_t *s2 = json_loads(out, 0, NULL);
    CHECKF(s2 && !strcmp(sget(s2, "state"), "rejected") && strstr(sget(s2, "reasons"), "wrong_result"), "%s",
           out);
    CHECK(strstr(sget(s2, "message"), "outside tolerance"));
    CHECK(!strcmp(sget(s2, "category"), "tiling"));
    /* errors: an unknown parent, a rejected parent, a missing file, a bad category */
    snprintf(args, sizeof args, "submit %s --parent 99 %s 2>&1", run, wrong);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "no node 99"), "%s", out);
    snprintf(args, sizeof args, "submit %s --parent %lld %s 2>&1", run,
             (long long)json_integer_value(json_object_get(s2, "id")), wrong);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "rejected"), "%s", out);
    snprintf(args, sizeof args, "submit %s --parent 0 %s/none.c 2>&1", run, dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "none.c"), "%s", out);
    snprintf(args, sizeof args, "submit %s --parent 0 %s --category speed 2>&1", run, wrong);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "speed"), "%s", out);
    json_t *t = tree(run);
    CHECK(json_array_size(json_object_get(t, "nodes")) == 2);
    json_decref(t);
    /* four agents asking at once get four different actions */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && for i in 1 2 3 4; do %s next %s --json > %s/next$i.json 2>&1 & done; wait",
             kft_src("."), kft_bin("kforge"), run, dir);
    CHECK(kft_run(cmd, out, sizeof out) == 0);
    char seen[4][64];
    for (int i = 0; i < 4; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/next%d.json", dir, i + 1);
        char *txt = slurp(p);
        json_t *j = txt ? json_loads(txt, 0, NULL) : NULL;
        CHECKF(j && json_object_get(j, "pending"), "%s", txt ? txt : p);
        snprintf(seen[i], sizeof seen[i], "%lld/%s",
                 (long long)json_integer_value(json_object_get(j, "parent")), sget(j, "category"));
        for (int k = 0; k < i; k++) CHECKF(strcmp(seen[k], seen[i]), "two agents got %s", seen[i]);
        json_decref(j);
        free(txt);
    }
    json_decref(a1);
    json_decref(a2);
    json_decref(s1);
    json_decref(s2);
    kf__rmtree(dir);
}

/* Categories in tool mode: `next` never asks for a specialisation of the root (nothing
 * is kept yet, so nothing to specialise); a file whose kforge:when contradicts its
 * category is refused before any evaluation, recording nothing, so the same file under
 * the right category is evaluated, not pruned; the same source under another label is
 * pruned (pointing at the earlier node) without a node; a description flows into tree. */
static void t_tool_categories(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-rac-XXXXXX", args[2048], out[1 << 17], run[256], when[300];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    /* every action at the root, until none is left: never a specialisation */
    int asked = 0;
    for (int i = 0; i < 12; i++) {
        snprintf(args, sizeof args, "next %s --json 2>&1", run);
        if (cli(args, out, sizeof out) != 0) break;
        json_t *j = json_loads(out, 0, NULL);
        CHECKF(j, "%s", out);
        CHECKF(strcmp(sget(j, "category"), "specialisation"), "next asked to specialise the reference: %s",
               out);
        /* the prompt defines the category it asks for */
        CHECKF(strstr(sget(j, "prompt"), "by a change of the kind") &&
                   strstr(sget(j, "prompt"), "Description: "),
               "%s", sget(j, "prompt"));
        json_decref(j);
        asked++;
    }
    CHECKF(asked >= 4, "only %d actions", asked);

    /* a kforge:when under another category: refused at once, at its line, nothing recorded */
    snprintf(when, sizeof when, "%s/when.c", dir);
    char *fast = slurp(kft_src("tasks/c/saxpy/candidates/fast.c"));
    CHECK(fast);
    char *wtext =
        kf__asprintf("/* fast saxpy, claimed for large n only */\n/* kforge:when n >= 1000 */\n%s", fast);
    write_text(when, wtext);
    free(wtext);
    snprintf(args, sizeof args, "submit %s --parent 0 %s --category vectorisation %s 2>&1", run, when, quick);
    double t0 = (double)kf__now_ns() / 1e9;
    int rc = cli(args, out, sizeof out);
    double el = (double)kf__now_ns() / 1e9 - t0;
    char want[512];
    snprintf(want, sizeof want, "%s:2: kforge:when \"n >= 1000\" narrows the task's domain", when);
    CHECKF(rc == 2 && strstr(out, want) && strstr(out, "refused before any evaluation"), "exit %d: %s", rc,
           out);
    CHECKF(el < 1.5, "a refusal took %.2f s", el);
    json_t *t = tree(run);
    CHECK(json_array_size(json_object_get(t, "nodes")) == 0);
    json_decref(t);
    /* a specialisation without a kforge:when: refused too */
    snprintf(args, sizeof args, "submit %s --parent 0 %s --category specialisation %s 2>&1", run,
             kft_src("tasks/c/saxpy/candidates/fast.c"), quick);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "has none: refused before any evaluation"), "%s",
           out);

    /* the same file as a specialisation: evaluated (nothing was before), with its description */
    snprintf(args, sizeof args,
             "submit %s --parent 0 %s --category specialisation --description '8 lanes, restrict\tpointers' "
             "--json %s",
             run, when, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *s1 = json_loads(out, 0, NULL);
    CHECKF(s1 && passed(sget(s1, "state")) && !strcmp(sget(s1, "category"), "specialisation"), "%s", out);
    CHECKF(!strcmp(sget(s1, "description"), "8 lanes, restrict pointers"), "%s", out);
    int64_t first = json_integer_value(json_object_get(s1, "id"));
    json_decref(s1);

    /* the fast file twice, under two labels: the second is the same source, pruned with no node */
    snprintf(args, sizeof args, "submit %s --parent 0 %s --category unrolling --json %s", run,
             kft_src("tasks/c/saxpy/candidates/fast.c"), quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *s2 = json_loads(out, 0, NULL);
    int64_t second = json_integer_value(json_object_get(s2, "id"));
    CHECK(second > first);
    json_decref(s2);
    snprintf(args, sizeof args, "submit %s --parent 0 %s --category tiling --json %s", run,
             kft_src("tasks/c/saxpy/candidates/fast.c"), quick);
    CHECKF(cli(args, out, sizeof out) == 1, "%s", out);
    json_t *s3 = json_loads(out, 0, NULL);
    CHECKF(s3 && !strcmp(sget(s3, "state"), "pruned") && json_is_null(json_object_get(s3, "id")) &&
               json_integer_value(json_object_get(s3, "same_as")) == second,
           "%s", out);
    snprintf(want, sizeof want, "the same source as node %lld", (long long)second);
    CHECKF(strstr(sget(s3, "note"), want), "%s", out);
    json_decref(s3);
    t = tree(run);
    CHECKF(json_array_size(json_object_get(t, "nodes")) == 2, "%zu nodes",
           json_array_size(json_object_get(t, "nodes")));
    json_decref(t);
    /* the text tree shows the description */
    snprintf(args, sizeof args, "tree %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 &&
               strstr(out, "tool/specialisation  \"8 lanes, restrict pointers\""),
           "%s", out);
    free(fast);
    kf__rmtree(dir);
}

/* Categories with an agent in `kforge run`: a candidate whose kforge:when contradicts the
 * category it was asked for is refused before any evaluation (a no_candidate node that
 * keeps its text, never compiled); an agent's description (KFORGE_OUT.description)
 * flows into tree and into the lessons distilled from the run. */
static void t_agent_categories(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-rag-XXXXXX", path[512], args[2048], out[1 << 17], script[2048], run[600];
    CHECK(mkdtemp(dir));
    snprintf(script, sizeof script, "{ echo '/* kforge:when n >= 1000 */'; cat %s; } > \"$KFORGE_OUT\"\n",
             kft_src("tasks/c/saxpy/candidates/fast.c"));
    snprintf(path, sizeof path, "%s/when.sh", dir);
    write_text(path, script);
    snprintf(run, sizeof run, "%s/r1", dir);
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 2 --seed 1 --run %s --agent 'cmd:sh %s' --json %s 2>&1", run, path,
             quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(strstr(out, "\"evaluations\":0") && strstr(out, "no candidate 3 times in a row"), "%s", out);
    json_t *t = tree(run);
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(t, "nodes"), i, n) {
        CHECKF(!strcmp(sget(n, "state"), "no_candidate") &&
                   strstr(sget(n, "note"), ":1: kforge:when \"n >= 1000\"") &&
                   strstr(sget(n, "note"), "refused before any evaluation"),
               "node %zu: %s %s", i, sget(n, "state"), sget(n, "note"));
        CHECK(strcmp(sget(n, "category"), "specialisation"));
    }
    CHECK(json_array_size(json_object_get(t, "nodes")) == 3);
    json_decref(t);

    snprintf(script, sizeof script,
             "cp %s \"$KFORGE_OUT\"\necho 'eight lanes with restrict pointers' > "
             "\"$KFORGE_OUT.description\"\n",
             kft_src("tasks/c/saxpy/candidates/fast.c"));
    snprintf(path, sizeof path, "%s/desc.sh", dir);
    write_text(path, script);
    snprintf(run, sizeof run, "%s/r2", dir);
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 1 --seed 1 --run %s --agent 'cmd:sh %s' --json %s 2>&1", run, path,
             quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    t = tree(run);
    n = json_array_get(json_object_get(t, "nodes"), 0);
    CHECKF(!strcmp(sget(n, "description"), "eight lanes with restrict pointers"), "%s", sget(n, "state"));
    int kept = !strcmp(sget(n, "state"), "kept");
    json_decref(t);
    if (kept) { /* a win lesson then says what the change was */
        snprintf(args, sizeof args,
                 "lessons distill %s --lessons %s/l.db --json >/dev/null 2>&1 && "
                 "%s lessons export --lessons %s/l.db",
                 run, dir, kft_bin("kforge"), dir);
        CHECKF(cli(args, out, sizeof out) == 0 &&
                   strstr(out, "What the change was: \\\"eight lanes with restrict "
                               "pointers\\\" (node 1)"),
               "%s", out);
    }
    kf__rmtree(dir);
}

void kft_register_run_agents(void) {
    kft_add("run_agents/cmd_run", t_cmd_run, NULL, 180);
    kft_add("run_agents/cmd_fails", t_cmd_fails, NULL, 60);
    kft_add("run_agents/cmd_jobs", t_cmd_jobs, NULL, 180);
    kft_add("run_agents/openai_run", t_openai_run, NULL, 120);
    kft_add("run_agents/openai_dead", t_openai_dead, NULL, 120);
    kft_add("run_agents/tool", t_tool, NULL, 180);
    kft_add("run_agents/tool_categories", t_tool_categories, NULL, 180);
    kft_add("run_agents/agent_categories", t_agent_categories, NULL, 180);
}
