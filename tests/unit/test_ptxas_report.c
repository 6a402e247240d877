/* test_ptxas_report.c: the compiler's ptxas driver (compiler/ptxas.c), linked from libtilec.
 * Checks the `ptxas -v` report parser on captured reports and, when ptxas can be found, assembles
 * a tiny kernel for real (no GPU needed). Prints one `ok NAME` / `FAIL NAME: why` line per check. */
#define _POSIX_C_SOURCE 200809L   /* setenv */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

/* ---------------------------------------------------------------- checks */

static int failures;

static void expect_int(const char *what, int got, int want)
{
    if (got == want) {
        printf("ok %s\n", what);
    } else {
        printf("FAIL %s: got %d, want %d\n", what, got, want);
        failures++;
    }
}

static void expect(const char *what, bool cond, const char *why)
{
    if (cond) {
        printf("ok %s\n", what);
    } else {
        printf("FAIL %s: %s\n", what, why);
        failures++;
    }
}

static KernelMeta blank(const char *name)
{
    KernelMeta k;
    memset(&k, 0, sizeof k);
    k.name = name;
    k.ptxas_regs = k.ptxas_spill_stores = k.ptxas_spill_loads = k.ptxas_stack = -1;
    return k;
}

static void test_two_kernels(void)
{
    static const char report[] =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'matmul' for 'sm_90'\n"
        "ptxas info    : Function properties for matmul\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 96 registers, used 1 barriers, 32768 bytes smem, 380 bytes cmem[0]\n"
        "ptxas info    : Compiling entry function 'softmax' for 'sm_90'\n"
        "ptxas info    : Function properties for softmax\n"
        "    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 255 registers, 384 bytes cmem[0]\n";
    KernelMeta ks[3] = { blank("softmax"), blank("matmul"), blank("unused") };
    ptxas_parse_report(report, ks, 3);
    expect_int("report matmul regs", ks[1].ptxas_regs, 96);
    expect_int("report matmul stack", ks[1].ptxas_stack, 0);
    expect_int("report matmul spill stores", ks[1].ptxas_spill_stores, 0);
    expect_int("report matmul spill loads", ks[1].ptxas_spill_loads, 0);
    expect_int("report softmax regs", ks[0].ptxas_regs, 255);
    expect_int("report softmax stack", ks[0].ptxas_stack, 24);
    expect_int("report softmax spill stores", ks[0].ptxas_spill_stores, 8);
    expect_int("report softmax spill loads", ks[0].ptxas_spill_loads, 12);
    expect_int("report kernel absent from the log untouched", ks[2].ptxas_regs, -1);
}

/* A device function's block in between must not be credited to the kernel before it; CRLF line
 * ends (logs copied from Windows) and a missing final newline are tolerated. */
static void test_foreign_blocks(void)
{
    static const char report[] =
        "ptxas info    : Compiling entry function 'vecadd' for 'sm_80'\r\n"
        "ptxas info    : Function properties for vecadd\r\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\r\n"
        "ptxas info    : Used 16 registers, 380 bytes cmem[0]\r\n"
        "ptxas info    : Function properties for helper\n"
        "    64 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 200 registers";
    KernelMeta ks[1] = { blank("vecadd") };
    ptxas_parse_report(report, ks, 1);
    expect_int("report crlf regs", ks[0].ptxas_regs, 16);
    expect_int("report foreign block stack", ks[0].ptxas_stack, 0);
    expect_int("report foreign block spills", ks[0].ptxas_spill_stores, 0);
}

static void test_empty(void)
{
    KernelMeta ks[1] = { blank("k") };
    ptxas_parse_report("", ks, 1);
    ptxas_parse_report("ptxas fatal   : Unresolved extern function 'f'\n", ks, 1);
    expect_int("report empty log", ks[0].ptxas_regs, -1);
}

/* Serialized wgmma for want of registers, in both wordings ptxas has (C7512 names the function
 * after "for the function", C7511 after "for the wgmma pipeline in the function"); the same
 * codes for another cause, and C7517 (a wait ptxas injected), are not that. */
static void test_wgmma_serialized(void)
{
    static const char report[] =
        "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
        "insufficient register resources for the wgmma pipeline in the function 'dkdv'\n"
        "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
        "insufficient register resources for the function 'dq'\n"
        "ptxas info    : (C7517) warpgroup.wait is injected in around line 557 by compiler to allow use of "
        "registers defined by GMMA in function 'fwd'\n"
        "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
        "the presence of Extern calls in the function 'ext'\n";
    KernelMeta ks[5] = { blank("dkdv"), blank("dq"), blank("fwd"), blank("ext"), blank("dkdv_d128") };
    ptxas_parse_report(report, ks, 5);
    expect("report C7511 serialized", ks[0].ptxas_wgmma_serialized, "not flagged");
    expect("report C7512 serialized", ks[1].ptxas_wgmma_serialized, "not flagged");
    expect("report C7517 not a register shortage", !ks[2].ptxas_wgmma_serialized, "flagged");
    expect("report C7510 not a register shortage", !ks[3].ptxas_wgmma_serialized, "flagged");
    expect("report a longer name not matched", !ks[4].ptxas_wgmma_serialized, "flagged");
}

/* A one-thread kernel that stores a constant: every ptxas since CUDA 11 accepts it. */
static const char tiny_ptx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry tiny(.param .u64 out)\n"
    "{\n"
    "    .reg .b64 %rd<2>;\n"
    "    .reg .b32 %r<2>;\n"
    "    ld.param.u64 %rd0, [out];\n"
    "    cvta.to.global.u64 %rd1, %rd0;\n"
    "    mov.u32 %r0, 42;\n"
    "    st.global.u32 [%rd1], %r0;\n"
    "    ret;\n"
    "}\n";

static void test_run(void)
{
    Buf cubin = {0}, log = {0};
    bool missing = false;
    bool ok = ptxas_run(tiny_ptx, "sm_80", &cubin, &log, &missing);
    if (!ok && missing) {
        printf("ok ptxas run (skipped: ptxas not found: %s)\n", ptxas_path());
        buf_free(&log);
        return;
    }
    expect("ptxas run succeeds", ok, log.s ? log.s : "no log");
    expect("ptxas run gives an ELF cubin",
           cubin.len > 4 && memcmp(cubin.s, "\177ELF", 4) == 0, "not an ELF file");
    KernelMeta ks[1] = { blank("tiny") };
    ptxas_parse_report(log.s ? log.s : "", ks, 1);
    expect("ptxas run report has registers", ks[0].ptxas_regs > 0, log.s ? log.s : "no log");
    expect_int("ptxas run report stack", ks[0].ptxas_stack, 0);
    buf_free(&cubin);
    buf_free(&log);

    /* Broken PTX: failure with ptxas' own message in the log, not "missing". */
    ok = ptxas_run(".version 7.0\n.target sm_80\n.address_size 64\nbogus;\n", "sm_80", &cubin,
                   &log, &missing);
    expect("ptxas rejects broken PTX", !ok && !missing && log.len > 0, "accepted or missing");
    buf_free(&cubin);
    buf_free(&log);

    /* An assembler that does not exist is reported as missing. */
    setenv("TILEC_PTXAS", "/nonexistent dir/ptxas", 1);
    ok = ptxas_run(tiny_ptx, "sm_80", &cubin, &log, &missing);
    expect("missing ptxas is reported as missing", !ok && missing, log.s ? log.s : "no log");
    unsetenv("TILEC_PTXAS");
    buf_free(&cubin);
    buf_free(&log);

    expect("option-like arch refused", !ptxas_run(tiny_ptx, "-v", &cubin, &log, &missing),
           "ran ptxas with arch '-v'");
    buf_free(&cubin);
    buf_free(&log);
}

int main(void)
{
    test_two_kernels();
    test_foreign_blocks();
    test_empty();
    test_wgmma_serialized();
    test_run();
    return failures ? 1 : 0;
}
