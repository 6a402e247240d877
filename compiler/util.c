/* util.c: the arena, growable arrays and text buffers, and diagnostics.
 *
 * Everything here is used by every stage, so it depends on nothing but libc. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

/* ---------------------------------------------------------------- arena */

/* A chain of chunks; allocation bumps a pointer in the newest chunk. Objects are never freed one
 * at a time: the whole arena goes at the end of the compilation. */
typedef struct Chunk {
    struct Chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
    Chunk *head;
};

enum { CHUNK_SIZE = 64 * 1024 };

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

Arena *arena_new(void)
{
    Arena *a = xmalloc(sizeof *a);
    a->head = NULL;
    return a;
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    for (Chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

void *arena_alloc(Arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    Chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        /* A request larger than a chunk gets a chunk of its own, put behind the current one so
         * the current chunk's free space is not wasted. */
        size_t size = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
        if (size > SIZE_MAX - sizeof(Chunk))
            die("out of memory (%zu bytes)", n);
        Chunk *nc = xmalloc(sizeof(Chunk) + size);
        nc->used = 0;
        nc->size = size;
        if (c && size != CHUNK_SIZE) {
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        die("arena_printf: bad format '%s'", fmt);
    char *p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* ---------------------------------------------------------------- vec */

void vec_grow_(void **v, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return;
    if (need < 0 || need > INT32_MAX / 2)
        die("array too large (%d elements)", need);
    int ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*v, (size_t)ncap * elem);
    if (!p)
        die("out of memory (%zu bytes)", (size_t)ncap * elem);
    *v = p;
    *cap = ncap;
}

/* ---------------------------------------------------------------- Map */

/* FNV-1a: short identifiers, no adversary to defend against beyond a pathological source, which
 * the linear probing below still bounds by the table size. */
static size_t hash_name(const char *s)
{
    uint64_t h = 14695981039346656037u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (size_t)h;
}

/* The slot of key, or the empty slot where it would go. cap is a power of two, never full. */
static size_t map_slot(const Map *m, const char *key, size_t h)
{
    size_t i = h & (m->cap - 1);
    while (m->e[i].key && (m->e[i].hash != h || strcmp(m->e[i].key, key)))
        i = (i + 1) & (m->cap - 1);
    return i;
}

void *map_get(const Map *m, const char *key)
{
    if (!m->n)
        return NULL;
    return m->e[map_slot(m, key, hash_name(key))].val;
}

void map_put(Map *m, const char *key, void *val)
{
    if (2 * (m->n + 1) > m->cap) {   /* at most half full: probes stay short */
        Map g = { NULL, 0, m->cap ? 2 * m->cap : 64 };
        g.e = calloc(g.cap, sizeof *g.e);
        if (!g.e)
            die("out of memory (%zu bytes)", g.cap * sizeof *g.e);
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].key)
                g.e[map_slot(&g, m->e[i].key, m->e[i].hash)] = m->e[i];
        g.n = m->n;
        free(m->e);
        *m = g;
    }
    size_t h = hash_name(key), i = map_slot(m, key, h);
    if (!m->e[i].key)
        m->n++;
    m->e[i] = (MapEntry){ key, val, h };
}

void map_del(Map *m, const char *key)
{
    if (!m->n)
        return;
    size_t mask = m->cap - 1, i = map_slot(m, key, hash_name(key));
    if (!m->e[i].key)
        return;
    m->n--;
    /* Backward shift: move up every later entry of the run whose home slot does not lie in
     * (i, j], so that no probe sequence meets a hole before its key. */
    for (size_t j = (i + 1) & mask; m->e[j].key; j = (j + 1) & mask) {
        size_t home = m->e[j].hash & mask;
        bool stays = i <= j ? i < home && home <= j : i < home || home <= j;
        if (!stays) {
            m->e[i] = m->e[j];
            i = j;
        }
    }
    m->e[i] = (MapEntry){ NULL, NULL, 0 };
}

void map_free(Map *m)
{
    free(m->e);
    *m = (Map){ NULL, 0, 0 };
}

/* ---------------------------------------------------------------- Buf */

static void buf_reserve(Buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;   /* always room for the terminating NUL */
    if (need <= b->cap)
        return;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap *= 2;
    char *p = realloc(b->s, ncap);
    if (!p)
        die("out of memory (%zu bytes)", ncap);
    b->s = p;
    b->cap = ncap;
}

static void buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        die("buf_printf: bad format '%s'", fmt);
    buf_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void buf_puts(Buf *b, const char *s)
{
    size_t n = strlen(s);
    buf_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void buf_add(Buf *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->s + b->len, data, n);
    b->len += n;
    b->s[b->len] = 0;
}

void buf_free(Buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

/* ---------------------------------------------------------------- diagnostics */

Diag diag;
jmp_buf *die_recover;

/* A note belongs to the error or warning before it: when that one was dropped by the cap, so
 * is the note. */
static bool last_dropped;

void diag_reset(const char *file, const char *src, size_t len)
{
    FILE *out = diag.out;
    bool quiet = diag.no_warnings;
    memset(&diag, 0, sizeof diag);
    diag.no_warnings = quiet;
    diag.file = file;
    diag.src = src;
    diag.len = len;
    diag.out = out;
    last_dropped = false;
}

static FILE *diag_out(void)
{
    return diag.out ? diag.out : stderr;
}

/* Messages go to the output, or into the capture of a trial compilation (compile.c), which
 * prints the capture of the attempt it keeps. */
static void diag_vprintf(const char *fmt, va_list ap)
{
    if (!diag.capture) {
        vfprintf(diag_out(), fmt, ap);
        return;
    }
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n <= 0)
        return;
    char *t = malloc((size_t)n + 1);
    if (!t)
        die("out of memory");
    vsnprintf(t, (size_t)n + 1, fmt, ap);
    buf_add(diag.capture, t, (size_t)n);
    free(t);
}

static void diag_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vprintf(fmt, ap);
    va_end(ap);
}

enum {
    TAB_STOP = 8,
    SHOW_COLS = 160,   /* longer source lines are shown as a window around the caret */
};

/* Prints the source line of loc and a caret under its column. Tabs are expanded to TAB_STOP in
 * both lines so the caret lines up; control bytes print as '?'; UTF-8 continuation bytes take no
 * column. Very long lines (a 10 MB identifier) are cut to a window around the caret. */
static void show_line(Loc loc)
{
    if (!diag.src || loc.line <= 0)
        return;
    const char *s = diag.src, *end = diag.src + diag.len;
    for (int line = 1; line < loc.line && s < end; s++)
        if (*s == '\n')
            line++;
    const char *eol = s;
    while (eol < end && *eol != '\n')
        eol++;
    if (eol > s && eol[-1] == '\r')
        eol--;
    size_t col = loc.col > 0 ? (size_t)loc.col - 1 : 0;
    if (col > (size_t)(eol - s))
        col = (size_t)(eol - s);
    /* Window of bytes [from, to) to show. */
    const char *from = s, *to = eol;
    if (col > SHOW_COLS / 2)
        from = s + col - SHOW_COLS / 2;
    if (to - from > SHOW_COLS)
        to = from + SHOW_COLS;
    while (from > s && from < eol && ((unsigned char)*from & 0xC0) == 0x80)
        from++;   /* do not start in the middle of a UTF-8 sequence */

    Buf text = {0};
    int width = 0, caret = -1;
    if (from > s) {
        buf_puts(&text, "...");
        width = 3;
    }
    for (const char *p = from; p < to; p++) {
        unsigned char c = (unsigned char)*p;
        if (p == s + col)
            caret = width;
        if (c == '\t') {
            int w = TAB_STOP - width % TAB_STOP;
            buf_printf(&text, "%*s", w, "");
            width += w;
        } else if (c < 0x20 || c == 0x7F) {
            buf_puts(&text, "?");
            width++;
        } else {
            buf_printf(&text, "%c", c);
            width += (c & 0xC0) != 0x80;
        }
    }
    if (caret < 0)
        caret = width;
    if (to < eol)
        buf_puts(&text, "...");
    diag_printf("%s\n%*s^\n", text.s ? text.s : "", caret, "");
    buf_free(&text);
}

static void report(const char *kind, Loc loc, const char *fmt, va_list ap)
{
    diag_printf("%s:%d:%d: %s: ", diag.file ? diag.file : "<input>", loc.line, loc.col, kind);
    diag_vprintf(fmt, ap);
    diag_printf("\n");
    show_line(loc);
}

void error_at(Loc loc, const char *fmt, ...)
{
    diag.nerrors++;
    if (diag.capped) {
        last_dropped = true;
        return;
    }
    if (diag.nerrors > MAX_ERRORS) {
        diag.capped = true;
        last_dropped = true;
        diag_printf("%s:%d:%d: error: too many errors, stopping\n",
                diag.file ? diag.file : "<input>", loc.line, loc.col);
        return;
    }
    last_dropped = false;
    va_list ap;
    va_start(ap, fmt);
    report("error", loc, fmt, ap);
    va_end(ap);
}

void warning_at(Loc loc, const char *fmt, ...)
{
    if (diag.capped) {
        last_dropped = true;
        return;
    }
    diag.nwarnings++;
    last_dropped = diag.no_warnings;   /* its notes go with it */
    if (diag.no_warnings)
        return;
    va_list ap;
    va_start(ap, fmt);
    report("warning", loc, fmt, ap);
    va_end(ap);
}

void note_at(Loc loc, const char *fmt, ...)
{
    if (last_dropped || diag.capped)
        return;
    va_list ap;
    va_start(ap, fmt);
    report("note", loc, fmt, ap);
    va_end(ap);
}

_Noreturn void die(const char *fmt, ...)
{
    if (diag.capture) {    /* a trial's messages first, then no more capture */
        Buf *b = diag.capture;
        diag.capture = NULL;
        if (b->len)
            fputs(b->s, diag_out());
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("tilec: internal error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    if (die_recover)
        longjmp(*die_recover, 1);
    abort();
}

void sys_error(const char *fmt, ...)
{
    diag.nerrors++;
    FILE *out = diag_out();
    va_list ap;
    va_start(ap, fmt);
    fputs("tilec: error: ", out);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
}

/* A whole file (at most max bytes) in a NUL-terminated heap buffer; NULL after an error said with
 * sys_error. */
char *read_file_max(const char *path, size_t *len, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        sys_error("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    Buf b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > max) {
            if (max % (1u << 20) == 0)
                sys_error("'%s' is larger than %zu MiB", path, max >> 20);
            else
                sys_error("'%s' is larger than %zu bytes", path, max);
            fclose(f);
            buf_free(&b);
            return NULL;
        }
        buf_add(&b, chunk, n);
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        sys_error("cannot read '%s'", path);
        buf_free(&b);
        return NULL;
    }
    if (!b.s)
        buf_add(&b, "", 0);
    *len = b.len;
    return b.s;
}
