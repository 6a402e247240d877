/* test_tune_file.c: the winners file of tilec-tune (compiler/tune_file.c): a round trip through
 * the writer and the reader, every malformed line with its file:line:col message, and the
 * checks against a program (kernel, sizes, consts). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "tilec.h"
#include "unit.h"

static const char program_src[] =
    "const BN = 2048;\n"
    "const UNROLL = 2;\n"
    "kernel rowsum(X: f32[R, N], Y: f32[R])\n"
    "    grid(R)\n"
    "    threads(256)\n"
    "{\n"
    "    var s: f32 = 0;\n"
    "    for j in 0 .. N step BN {\n"
    "        s += sum(X[block.x, j +: BN]);\n"
    "    }\n"
    "    Y[block.x] = s;\n"
    "}\n";

/* Parses text as a winners file named w.txt, messages into msgs; with p, also checks it. */
static bool parse(Arena *a, const char *text, const Program *p, TuneClass **cs, int *n, Buf *msgs)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    diag.out = out;
    diag_reset("w.txt", text, strlen(text));
    bool ok = tune_file_parse(a, cs, n) && (!p || tune_file_check(*cs, *n, p));
    fclose(out);
    diag.out = NULL;
    msgs->len = 0;
    buf_puts(msgs, buf ? buf : "");
    free(buf);
    return ok;
}

static void expect_error(Arena *a, const char *text, const Program *p, const char *want)
{
    TuneClass *cs;
    int n;
    Buf msgs = { 0 };
    char name[200];
    snprintf(name, sizeof name, "error: %s", want);
    bool ok = parse(a, text, p, &cs, &n, &msgs);
    unit_check(!ok && strstr(msgs.s, want), name, "got %s: '%s'", ok ? "success" : "failure",
               msgs.s ? msgs.s : "");
    buf_free(&msgs);
}

int main(void)
{
    Arena *a = arena_new();
    static const char text[] =
        "# tilec-tune winners\n"
        "\n"
        "matmul_f16 M=512,K=8192,N=8192 BM=64,BN=128,STAGES=4   # 0.1234 ms, 1.10x\n"
        "  matmul_f16\tM=4096,K=8192,N=8192  -\n"
        "softmax R=4096,N=4096 BN=4096\n";
    TuneClass *cs;
    int n;
    Buf msgs = { 0 };
    bool ok = parse(a, text, NULL, &cs, &n, &msgs);
    unit_check(ok && n == 3, "parse a winners file", "ok %d, %d classes: %s", ok, n, msgs.s);
    if (ok && n == 3) {
        unit_check(!strcmp(cs[0].kernel, "matmul_f16") && cs[0].nsizes == 3 && cs[0].size[0] == 512
                   && !strcmp(cs[0].size_name[2], "N") && cs[0].ndefs == 3
                   && !strcmp(cs[0].defs[1].name, "BN") && !strcmp(cs[0].defs[1].value, "128")
                   && cs[0].comment && !strcmp(cs[0].comment, "0.1234 ms, 1.10x")
                   && cs[0].loc.line == 3 && cs[0].loc.col == 1,
                   "first class's fields", "kernel %s", cs[0].kernel);
        unit_check(cs[1].ndefs == 0 && cs[1].size[0] == 4096 && !cs[1].comment && cs[1].loc.col == 3,
                   "'-' is the file's own consts", "ndefs %d", cs[1].ndefs);
        Buf w1 = { 0 }, w2 = { 0 };
        tune_file_write(&w1, cs, n);
        unit_check(w1.s && !strcmp(w1.s,
                   "matmul_f16 M=512,K=8192,N=8192 BM=64,BN=128,STAGES=4   # 0.1234 ms, 1.10x\n"
                   "matmul_f16 M=4096,K=8192,N=8192 -\n"
                   "softmax R=4096,N=4096 BN=4096\n"), "written form", "'%s'", w1.s);
        TuneClass *cs2;
        int n2;
        char *copy = arena_strndup(a, w1.s, w1.len);
        ok = parse(a, copy, NULL, &cs2, &n2, &msgs);
        if (ok)
            tune_file_write(&w2, cs2, n2);
        unit_check(ok && n2 == n && w2.s && !strcmp(w1.s, w2.s), "round trip", "'%s' vs '%s'",
                   w1.s, w2.s ? w2.s : "");
        buf_free(&w1);
        buf_free(&w2);
    }
    /* a comment with a newline in it stays on its line */
    TuneClass one;
    memset(&one, 0, sizeof one);
    one.kernel = "k";
    one.nsizes = 1;
    one.size_name[0] = "N";
    one.size[0] = 7;
    one.comment = "two\nlines";
    Buf w = { 0 };
    tune_file_write(&w, &one, 1);
    unit_check(w.s && !strcmp(w.s, "k N=7 -   # two lines\n"), "a comment stays one line", "'%s'", w.s);
    buf_free(&w);

    ok = parse(a, "# nothing but comments\n\n   \n", NULL, &cs, &n, &msgs);
    unit_check(ok && n == 0, "an empty file has no classes", "%d", n);

    expect_error(a, "k\n", NULL, "w.txt:1:2: error: kernel 'k': expected its sizes");
    expect_error(a, "k N=4\n", NULL, "w.txt:1:6: error: expected the consts");
    expect_error(a, "k N=4 # c\n", NULL, "w.txt:1:7: error: expected the consts");
    expect_error(a, "k N=0 -\n", NULL, "w.txt:1:5: error: size N=0: a size is an integer from 1");
    expect_error(a, "k N=2147483648 -\n", NULL, "size N=2147483648: a size is an integer from 1 to 2147483647");
    expect_error(a, "k N=4x -\n", NULL, "size N=4x");
    expect_error(a, "k N=4,N=5 -\n", NULL, "w.txt:1:7: error: size 'N' given twice");
    expect_error(a, "k N= -\n", NULL, "w.txt:1:5: error: size 'N' has no value");
    expect_error(a, "k =4 -\n", NULL, "w.txt:1:3: error: expected size NAME=VALUE, got '=4'");
    expect_error(a, "k N=4 BM=1,BM=2\n", NULL, "w.txt:1:12: error: const 'BM' given twice");
    expect_error(a, "k N=4 BM\n", NULL, "expected const NAME=VALUE, got 'BM'");
    expect_error(a, "k N=4 - extra\n", NULL, "w.txt:1:9: error: unexpected 'extra' after the consts");
    expect_error(a, "9k N=4 -\n", NULL, "w.txt:1:1: error: expected a kernel name, got '9k'");
    expect_error(a, "ok N=1 -\nk N=4\n", NULL, "w.txt:2:6: error: expected the consts");

    /* checked against a program */
    diag_reset("rowsum.tile", program_src, strlen(program_src));
    Program *p = compile_front(a, "rowsum.tile", program_src, strlen(program_src), NULL, 0);
    unit_check(p != NULL, "the test program compiles", "compile_front failed");
    if (p) {
        ok = parse(a, "rowsum R=8192,N=8192 BN=4096,UNROLL=1\nrowsum N=512,R=64 -\n", p, &cs, &n, &msgs);
        unit_check(ok && n == 2, "classes that fit the program", "%s", msgs.s);
        expect_error(a, "nosuch R=1,N=1 -\n", p, "w.txt:1:1: error: no kernel 'nosuch' in the source");
        expect_error(a, "rowsum R=1,N=1,K=3 -\n", p, "w.txt:1:16: error: kernel 'rowsum' has no size 'K'");
        expect_error(a, "rowsum R=1 -\n", p, "w.txt:1:1: error: the class of kernel 'rowsum' does not give its size 'N'");
        expect_error(a, "rowsum R=1,N=1 BM=4\n", p, "w.txt:1:16: error: no const 'BM' in the source");
        expect_error(a, "rowsum R=1,N=1 -\nrowsum N=1,R=1 BN=64\n", p,
                     "w.txt:2:1: error: kernel 'rowsum' has a class at these sizes already (line 1)");
    }
    buf_free(&msgs);
    arena_free(a);
    return unit_exit();
}
