/* meta_source.c: the program's source carried in its PTX module, as comment lines after the
 * metadata, so that the interpreter can run any module tilec wrote (runtime/host/ loads modules
 * this way, and the GPU test programs then run on the CPU).
 *
 * The lines:
 *   //$source 1
 *   //$file BASE64              the source's file name, for messages
 *   //$print all-blocks         compiled with --print-all-blocks (print() in every block)
 *   //$define NAME VALUE        one per const a -D replaced, with the value it took
 *   //$ BASE64                  the source text, 57 bytes (76 characters) a line
 *   //$end
 * Base64 (RFC 4648, padded) keeps the lines printable ASCII, as ptxas wants even in comments,
 * and keeps the source's words out of the module's text: a tool or test that searches PTX for
 * an instruction (mma.sync, .local) never finds it in a comment of the source. The runtime's
 * metadata parser reads only //@ lines. */
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Appends s[0..n) in base64. */
static void put_base64(Buf *b, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        char out[4] = { b64[v >> 18], b64[(v >> 12) & 63], i + 1 < n ? b64[(v >> 6) & 63] : '=',
                        i + 2 < n ? b64[v & 63] : '=' };
        buf_add(b, out, 4);
    }
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* Appends the bytes base64 text q[0..e) holds (whole groups of four) to out; false when it is
 * not base64. */
static bool get_base64(Buf *out, const char *q, const char *e)
{
    if ((e - q) % 4)
        return false;
    for (; q < e; q += 4) {
        int v[4], pad = 0;
        for (int i = 0; i < 4; i++) {
            v[i] = q[i] == '=' && i >= 2 ? 0 : b64_value(q[i]);
            pad += q[i] == '=';
            if (v[i] < 0 || (pad && q[i] != '='))
                return false;
        }
        unsigned x = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        char bytes[3] = { (char)(x >> 16), (char)(x >> 8), (char)x };
        buf_add(out, bytes, (size_t)(3 - pad));
        if (pad && q + 4 < e)
            return false;
    }
    return true;
}

const char *meta_source_block(Arena *a, const Program *p, bool print_all_blocks)
{
    enum { LINE_BYTES = 57 };
    Buf b = { 0 };
    const char *file = p->file ? p->file : "<input>";
    buf_puts(&b, "//$source 1\n//$file ");
    put_base64(&b, (const unsigned char *)file, strlen(file));
    buf_puts(&b, "\n");
    if (print_all_blocks)
        buf_puts(&b, "//$print all-blocks\n");
    for (int i = 0; i < p->nconsts; i++) {
        const ConstDecl *d = &p->consts[i];
        if (!d->overridden)
            continue;
        if (d->value->kind == E_INT)
            buf_printf(&b, "//$define %s %lld\n", d->name, (long long)d->value->ival);
        else
            buf_printf(&b, "//$define %s %.17e\n", d->name, d->value->fval);
    }
    for (size_t i = 0; p->src && i < p->len; i += LINE_BYTES) {
        buf_puts(&b, "//$ ");
        put_base64(&b, (const unsigned char *)p->src + i, p->len - i < LINE_BYTES ? p->len - i : LINE_BYTES);
        buf_puts(&b, "\n");
    }
    buf_puts(&b, "//$end\n");
    const char *r = arena_strndup(a, b.s, b.len);
    buf_free(&b);
    return r;
}

bool meta_source_read(const char *ptx, Buf *file, Buf *src, Define *defs, int *ndefs, Buf *names,
                      bool *print_all_blocks)
{
    *ndefs = 0;
    if (print_all_blocks)
        *print_all_blocks = false;
    bool in = false, done = false, last = false;
    /* define names and values go into names, NUL-separated; offsets first, pointers after */
    size_t offs[2 * META_MAX_DEFINES];
    for (const char *p = ptx; *p && !done;) {
        size_t len = strcspn(p, "\n");
        const char *next = p + len + (p[len] == '\n');
        if (len >= 3 && !memcmp(p, "//$", 3)) {
            const char *q = p + 3, *e = p + len;
            while (e > q && (e[-1] == '\r' || e[-1] == ' '))
                e--;
            if (!in) {
                in = e - q == 8 && !memcmp(q, "source 1", 8);
            } else if (e - q == 3 && !memcmp(q, "end", 3)) {
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
            } else if (e - q == 16 && !memcmp(q, "print all-blocks", 16)) {
                if (print_all_blocks)
                    *print_all_blocks = true;
            } else if (e - q >= 5 && !memcmp(q, "file ", 5)) {
                if (!get_base64(file, q + 5, e))
                    return false;
            } else if (e - q >= 1 && q[0] == ' ') {
                /* only the last line may be short (padded) */
                if (last || !get_base64(src, q + 1, e))
                    return false;
                last = e[-1] == '=' || e - q - 1 < 76;
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
