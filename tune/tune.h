/* tune.h: tilec-tune's shared declarations, a section per source file.
 *
 * Data flow (main.c): arguments (args.c) -> candidates, the product of the -D lists, checked
 * against the file (candidates.c) -> tilec on each, in parallel, and the discard step on its
 * report (compile_jobs.c) -> the kernel's tensors per size set (inputs.c) -> timing on the GPU
 * (timing.c) -> the table, the winners (table.c, and compiler/tune_file.c for the file). */
#ifndef TUNE_H
#define TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tilec.h"

enum {
    EXIT_ERROR = 1, EXIT_USAGE = 2,
    MAX_CONSTS = 16,       /* -D lists */
    MAX_VALUES = 64,       /* values of one -D list */
    MAX_SIZESETS = 16,     /* --sizes */
    MAX_SCALARS = 32,      /* --arg */
    MAX_CANDIDATES = 4096, /* the product's size, the defaults included */
    MAX_KARGS = 64,        /* the kernel's arguments */
};

/* ---------------------------------------------------------------- args.c */

typedef struct { const char *name; const char *values[MAX_VALUES]; int nvalues; } ConstList;
typedef struct { int n; const char *name[TUNE_MAX_SIZES]; int64_t value[TUNE_MAX_SIZES]; char text[256]; } SizeSet;
typedef struct { const char *name, *value; } ScalarArg;

typedef struct {
    const char *input, *kernel, *output;
    const char *arch;          /* NULL: this machine's GPU 0, else tilec's default */
    const char *tilec;         /* NULL: the tilec beside this program, else on PATH */
    ConstList consts[MAX_CONSTS]; int nconsts;
    SizeSet sizes[MAX_SIZESETS]; int nsizesets;
    ScalarArg scalars[MAX_SCALARS]; int nscalars;
    int jobs;                  /* tilec runs at once; 0: one per online processor */
    int reps, warmup, device;
    bool no_run;               /* --no-run: compile and discard, time nothing */
    bool progress;             /* a progress bar on stderr (a terminal, unless --no-progress) */
} TuneArgs;

/* Fills a from argv. 0, or EXIT_USAGE after printing `tilec-tune: error: ...`; --help and
 * --version print and give -1 (the caller exits 0). */
int parse_tune_args(TuneArgs *a, int argc, char **argv);
void tune_usage(FILE *out);

/* ---------------------------------------------------------------- candidates.c */

typedef struct {
    const char *values[MAX_CONSTS];    /* per -D list, the value this candidate takes */
    bool is_default;                   /* the file's own consts: no -D at all */
    char label[512];                   /* "BM=64 BN=128", the defaults' with " (defaults)" */
    /* compile_jobs.c */
    char ptx_path[1200];
    int threads, smem, regs, spill_stores, spill_loads, blocks_per_sm;
    bool ptxas_ran;
    bool alive;                        /* false: discarded, why says why */
    char why[512];
    /* timing.c: per size set, the median in ms, or < 0 with na saying why */
    double ms[MAX_SIZESETS];
    char na[MAX_SIZESETS][400];
} Candidate;

/* What the file says: the kernel's checked front end with the file's own consts. */
typedef struct {
    Arena *arena;
    char *src; size_t len;
    Program *p;
    Kernel *k;
    const char *default_value[MAX_CONSTS];   /* the file's value of each -D list's const */
} Source;

/* Reads and checks the file (errors as file:line:col), finds the kernel, checks that each -D
 * list names a const of the file and that each --sizes set gives exactly the kernel's sizes and
 * --arg its scalars. 0 or the exit status. */
int load_source(const TuneArgs *a, Source *s);
void source_free(Source *s);
/* The candidates: the defaults first, then the product of the -D lists in order (the last list
 * varies fastest), without the one equal to the defaults. NULL and *n 0 after an error. */
Candidate *make_candidates(const TuneArgs *a, const Source *s, int *n);

/* ---------------------------------------------------------------- compile_jobs.c */

/* Runs tilec --emit=ptx --report=json on every candidate, a.jobs at a time, into dir; reads
 * each report and discards (alive false, why set) those that fail to compile, spill, or whose
 * blocks cannot fit a multiprocessor. Returns false only when tilec cannot be run at all. */
bool compile_candidates(const TuneArgs *a, Candidate *cs, int n, const char *dir, const char *arch);
/* The tilec to run: a.tilec, else `tilec` beside this program, else "tilec" (PATH). */
const char *tilec_path(const TuneArgs *a, char *buf, size_t size);
/* Reads one line of --report=json for kernel into c (threads, smem, registers, spills); false
 * when the line is not that kernel's. */
bool read_report_line(const char *line, const char *kernel, Candidate *c);

/* ---------------------------------------------------------------- inputs.c */

/* One argument of the kernel, in ABI order. */
typedef enum { IN_TENSOR, IN_SCALAR, IN_SIZE } InputKind;
typedef struct {
    InputKind kind;
    const char *name;
    ElemType type;
    int64_t elems;         /* IN_TENSOR: elements to allocate (the farthest one addressed + 1) */
    int64_t ival;          /* IN_SIZE, integer and bool IN_SCALAR */
    double fval;           /* float IN_SCALAR */
} Input;

/* The kernel's arguments at one size set: tensors' element counts from their dims and strides,
 * sizes from the set, scalars from --arg (default 1). false with why on a size that does not
 * give a tensor extent (a stride expression it cannot evaluate, more than 2^40 elements). */
bool kernel_inputs(const TuneArgs *a, const Source *s, const SizeSet *set, Input *in, int *n,
                   char *why, size_t why_size);
/* Fills n elements of type t at host memory dst (type_size(t) bytes each): floats uniform in
 * [-1, 1), integers in [0, bound), 8-bit floats finite; the same seed gives the same values. */
void fill_host(void *dst, int64_t n, ElemType t, uint64_t seed, int64_t bound);
/* f32 as the bits of f16 or (bf16) bf16, rounded to nearest even. */
uint16_t half_bits(float f, bool bf16);
/* kernel_inputs with each tensor as large as the largest any live candidate addresses (a const
 * may be an extent). */
bool max_inputs(const TuneArgs *a, const Source *s, const Candidate *cs, int n,
                const SizeSet *set, Input *in, int *nin, char *why, size_t why_size);

/* ---------------------------------------------------------------- timing.c */

/* Times every live candidate at every size set on the GPU (a.device) with the benchmark's
 * method, filling ms and na, and device with its name. *skipped: no GPU (the reason printed); not an error. false after a
 * GPU error that stops the timing (printed). */
bool time_candidates(const TuneArgs *a, const Source *s, Candidate *cs, int n, bool *skipped,
                     char *device, size_t device_size);

/* ---------------------------------------------------------------- table.c */

/* A progress bar on stderr: "[#####.....] 12/40 compiling". done == total ends the line. */
void progress(bool on, const char *what, int done, int total);
/* The table: each candidate with registers, shared memory and per size its time and speed
 * relative to the defaults; then the discarded with their reasons. */
void print_table(FILE *out, const TuneArgs *a, const Candidate *cs, int n, bool timed);
/* The winner per size set (-1 when no candidate ran there). */
int winner(const Candidate *cs, int n, int set);
/* The winners file's text for these results. */
void winners_text(Buf *out, const TuneArgs *a, const Source *s, const Candidate *cs, int n,
                  const char *arch, const char *device);

/* ---------------------------------------------------------------- check.c */

/* Are n elements of type t at got what the defaults wrote (want), within the type's tolerance?
 * false with why naming the element. */
bool same_result(const void *got, const void *want, int64_t n, ElemType t, char *why, size_t why_size);

#endif
