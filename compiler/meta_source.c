/* meta_source.c: the program's source carried in its PTX module, as comment lines after the
 * metadata, so that the interpreter can run any module tilec wrote (runtime/host/ loads modules
 * this way, and the GPU test programs then run on the CPU).
 *
 * The lines:
 *   //$source 1
 *   //$file NAME                the source's name, escaped as TEXT is, for messages
 *   //$define NAME VALUE        one per const a -D replaced, with the value it took
 *   //$ TEXT                    one per source line, escaped
 *   //$end
 * TEXT is printable ASCII, as ptxas wants even in comments: a backslash is written \\ and any
 * other byte outside 0x20..0x7e \xHH. The runtime's metadata parser reads only //@ lines. */
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

/* Appends s[0..n) escaped. */
static void put_escaped(Buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char u = (unsigned char)s[i];
        if (u == '\\')
            buf_puts(b, "\\\\");
        else if (u >= 0x20 && u <= 0x7e)
            buf_add(b, s + i, 1);
        else
            buf_printf(b, "\\x%02x", u);
    }
}

const char *meta_source_block(Arena *a, const Program *p)
{
    Buf b = { 0 };
    buf_puts(&b, "//$source 1\n//$file ");
    put_escaped(&b, p->file ? p->file : "<input>", strlen(p->file ? p->file : "<input>"));
    buf_puts(&b, "\n");
    for (int i = 0; i < p->nconsts; i++) {
        const ConstDecl *d = &p->consts[i];
        if (!d->overridden)
            continue;
        if (d->value->kind == E_INT)
            buf_printf(&b, "//$define %s %lld\n", d->name, (long long)d->value->ival);
        else
            buf_printf(&b, "//$define %s %.17e\n", d->name, d->value->fval);
    }
    const char *s = p->src, *end = p->src + p->len;
    while (s && s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *stop = nl ? nl : end;
        buf_puts(&b, "//$ ");
        put_escaped(&b, s, (size_t)(stop - s));
        buf_puts(&b, "\n");
        s = nl ? nl + 1 : end;
    }
    buf_puts(&b, "//$end\n");
    const char *r = arena_strndup(a, b.s, b.len);
    buf_free(&b);
    return r;
}

static int hex(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Appends the unescaped text of q[0..e) to out; false on a bad escape. */
static bool get_escaped(Buf *out, const char *q, const char *e)
{
    for (; q < e; q++) {
        if (*q != '\\') {
            buf_add(out, q, 1);
        } else if (q + 1 < e && q[1] == '\\') {
            buf_add(out, "\\", 1);
            q++;
        } else if (q + 3 < e && q[1] == 'x' && hex(q[2]) >= 0 && hex(q[3]) >= 0) {
            char c = (char)(hex(q[2]) * 16 + hex(q[3]));
            buf_add(out, &c, 1);
            q += 3;
        } else {
            return false;
        }
    }
    return true;
}

bool meta_source_read(const char *ptx, Buf *file, Buf *src, Define *defs, int *ndefs, Buf *names)
{
    *ndefs = 0;
    bool in = false, done = false;
    /* define names and values go into names, NUL-separated; offsets first, pointers after */
    size_t offs[2 * META_MAX_DEFINES];
    for (const char *p = ptx; *p && !done;) {
        size_t len = strcspn(p, "\n");
        const char *next = p + len + (p[len] == '\n');
        if (len >= 3 && !memcmp(p, "//$", 3)) {
            const char *q = p + 3, *e = p + len;
            if (!in) {
                in = len >= 11 && !memcmp(q, "source 1", 8);
            } else if (e - q >= 3 && !memcmp(q, "end", 3)) {
                done = true;
            } else if (e - q >= 7 && !memcmp(q, "define ", 7)) {
                const char *n = q + 7, *sp = memchr(n, ' ', (size_t)(e - n));
                if (!sp || *ndefs >= META_MAX_DEFINES)
                    return false;
                offs[2 * *ndefs] = names->len;
                buf_add(names, n, (size_t)(sp - n));
                buf_add(names, "", 1);
                offs[2 * *ndefs + 1] = names->len;
                buf_add(names, sp + 1, (size_t)(e - sp - 1));
                buf_add(names, "", 1);
                (*ndefs)++;
            } else if (e - q >= 5 && !memcmp(q, "file ", 5)) {
                if (!get_escaped(file, q + 5, e))
                    return false;
            } else if (e - q >= 1 && q[0] == ' ') {
                if (!get_escaped(src, q + 1, e))
                    return false;
                buf_add(src, "\n", 1);
            } else if (e == q) {
                buf_add(src, "\n", 1);
            } else {
                return false;
            }
        }
        p = next;
    }
    if (!done)
        return false;
    if (!src->s)
        buf_add(src, "", 0);
    if (!file->s)
        buf_add(file, "<module>", 8);
    for (int i = 0; i < *ndefs; i++)
        defs[i] = (Define){ names->s + offs[2 * i], names->s + offs[2 * i + 1], false };
    return true;
}
