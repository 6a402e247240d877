/* lex.re: the tokenizer (re2c). The whole file is in memory and NUL-terminated (diag.src); the
 * terminating NUL is the sentinel, a NUL before the end is a stray byte. Keywords come before
 * identifiers; any byte no rule accepts is reported where it stands and skipped, so the parser
 * never sees it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tilec.h"
#include "parse.h"

enum {
    MAX_IDENT = 255,      /* bytes in a name: kernel and argument names go into the metadata */
    MAX_NUMBER = 64,      /* bytes in a numeric literal */
};
_Static_assert((int)MAX_IDENT <= (int)TILERT_MAX_NAME, "names longer than the runtime reads");

void lexer_init(Lexer *lx, Arena *a)
{
    memset(lx, 0, sizeof *lx);
    lx->a = a;
    lx->src = diag.src;
    lx->cur = diag.src;
    lx->lim = diag.src + diag.len;
    lx->line_start = diag.src;
    lx->line = 1;
}

static Loc here(Lexer *lx, const char *p)
{
    return (Loc){lx->line, (int)(p - lx->line_start) + 1};
}

/* Fills the token's end and remembers it: syntax errors point just after the previous token
 * when the next one is on a later line (a missing ';' at the end of a line). */
static int finish(Lexer *lx, YYLTYPE *lloc, int tok)
{
    lloc->end = (size_t)(lx->cur - lx->src);
    lloc->end_loc = here(lx, lx->cur);
    lx->prev = lx->last;
    lx->last = *lloc;
    return tok;
}

/* An unsigned literal that must fit in int64; base 10 or 16. */
static bool parse_int(const char *s, const char *e, int base, int64_t *out)
{
    uint64_t v = 0;
    for (; s < e; s++) {
        int d = *s <= '9' ? *s - '0' : (*s | 0x20) - 'a' + 10;
        if (v > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = (int64_t)v;
    return true;
}

/* Skips a block comment whose opening ends at lx->cur. Returns false when it never ends. */
static bool skip_block_comment(Lexer *lx)
{
    for (const char *p = lx->cur; p < lx->lim; p++) {
        if (*p == '\n') {
            lx->line++;
            lx->line_start = p + 1;
        } else if (p[0] == '*' && p + 1 < lx->lim && p[1] == '/') {
            lx->cur = p + 2;
            return true;
        }
    }
    lx->cur = lx->lim;
    return false;
}

/* Opening brackets count towards MAX_NESTING: deeper input is refused here, before the parser's
 * stack or the checker's recursion could grow with it. */
static int open_bracket(Lexer *lx, YYLTYPE *lloc, int tok)
{
    if (++lx->depth > MAX_NESTING) {
        error_at(lloc->loc, "brackets nested too deeply (more than %d levels)", MAX_NESTING);
        lx->stop = true;
    }
    return finish(lx, lloc, tok);
}

static int close_bracket(Lexer *lx, YYLTYPE *lloc, int tok)
{
    if (lx->depth > 0)
        lx->depth--;
    return finish(lx, lloc, tok);
}

int yylex(YYSTYPE *lval, YYLTYPE *lloc, Lexer *lx)
{
    for (;;) {
        const char *tok = lx->cur;
        lloc->loc = here(lx, tok);
        lloc->off = (size_t)(tok - lx->src);
        if (lx->stop || diag.capped) {
            /* Give the parser the end of input so it winds down without more messages. */
            lx->cur = lx->lim;
            lloc->loc = here(lx, lx->lim);
            lloc->off = (size_t)(lx->lim - lx->src);
            return finish(lx, lloc, YYEOF);
        }
        const unsigned char *YYCURSOR = (const unsigned char *)tok, *YYMARKER = YYCURSOR;
#define TOKEN(t) do { lx->cur = (const char *)YYCURSOR; return finish(lx, lloc, (t)); } while (0)
#define OPEN(t) do { lx->cur = (const char *)YYCURSOR; return open_bracket(lx, lloc, (t)); } while (0)
#define CLOSE(t) do { lx->cur = (const char *)YYCURSOR; return close_bracket(lx, lloc, (t)); } while (0)
#define SKIP() do { lx->cur = (const char *)YYCURSOR; } while (0)
        /*!re2c
            re2c:define:YYCTYPE = "unsigned char";
            re2c:yyfill:enable = 0;

            dec   = [0-9]+;
            hex   = "0" [xX] [0-9a-fA-F]+;
            exp   = [eE] [+-]? [0-9]+;
            float = [0-9]+ "." [0-9]+ exp? | [0-9]+ exp;
            ident = [a-zA-Z_] [a-zA-Z0-9_]*;

            "\x00" {
                if ((const char *)YYCURSOR - 1 >= lx->lim) {
                    lx->cur = lx->lim;
                    return finish(lx, lloc, YYEOF);
                }
                SKIP();
                error_at(lloc->loc, "stray byte 0x00 in program");
                continue;
            }
            "\n" { SKIP(); lx->line++; lx->line_start = lx->cur; continue; }
            [ \t\r\v\f]+ { SKIP(); continue; }
            "//" [^\n\x00]* { SKIP(); continue; }
            "/*" {
                SKIP();
                if (!skip_block_comment(lx)) {
                    error_at(lloc->loc, "unterminated comment");
                    lx->stop = true;
                }
                continue;
            }

            "const"      { TOKEN(CONST); }
            "kernel"     { TOKEN(KERNEL); }
            "grid"       { TOKEN(GRID); }
            "threads"    { TOKEN(THREADS); }
            "strides"    { TOKEN(STRIDES); }
            "let"        { TOKEN(LET); }
            "var"        { TOKEN(VAR); }
            "shared"     { TOKEN(SHARED); }
            "for"        { TOKEN(FOR); }
            "in"         { TOKEN(IN); }
            "step"       { TOKEN(STEP); }
            "pipeline"   { TOKEN(PIPELINE); }
            "if"         { TOKEN(IF); }
            "else"       { TOKEN(ELSE); }
            "atomic_add" { TOKEN(ATOMIC_ADD); }
            "atomic_max" { TOKEN(ATOMIC_MAX); }
            "assume"     { TOKEN(ASSUME); }
            "block"      { TOKEN(BLOCK); }
            "true"       { TOKEN(TRUE); }
            "false"      { TOKEN(FALSE); }
            "inf"        { TOKEN(INF); }
            "tf32"       { TOKEN(TF32); }
            "f32"        { lval->t = TY_F32; TOKEN(TYPE); }
            "f16"        { lval->t = TY_F16; TOKEN(TYPE); }
            "bf16"       { lval->t = TY_BF16; TOKEN(TYPE); }
            "i32"        { lval->t = TY_I32; TOKEN(TYPE); }
            "u32"        { lval->t = TY_U32; TOKEN(TYPE); }
            "i64"        { lval->t = TY_I64; TOKEN(TYPE); }
            "bool"       { lval->t = TY_BOOL; TOKEN(TYPE); }
            "i8"         { lval->t = TY_I8; TOKEN(TYPE); }
            "u8"         { lval->t = TY_U8; TOKEN(TYPE); }
            "f8e4m3"     { lval->t = TY_F8E4M3; TOKEN(TYPE); }
            "f8e5m2"     { lval->t = TY_F8E5M2; TOKEN(TYPE); }

            ident {
                size_t n = (size_t)((const char *)YYCURSOR - tok);
                if (n > MAX_IDENT) {
                    error_at(lloc->loc, "identifier too long (%zu bytes; at most %d)", n, MAX_IDENT);
                    n = MAX_IDENT;
                }
                lval->s = arena_strndup(lx->a, tok, n);
                TOKEN(IDENT);
            }
            dec | hex {
                const char *e = (const char *)YYCURSOR;
                bool is_hex = e - tok > 2 && (tok[1] == 'x' || tok[1] == 'X');
                lval->i = 0;
                if (e - tok > MAX_NUMBER)
                    error_at(lloc->loc, "numeric literal too long (at most %d characters)", MAX_NUMBER);
                else if (!parse_int(is_hex ? tok + 2 : tok, e, is_hex ? 16 : 10, &lval->i))
                    error_at(lloc->loc, "integer literal too large");
                TOKEN(INT);
            }
            float {
                const char *e = (const char *)YYCURSOR;
                lval->f = 0;
                if (e - tok > MAX_NUMBER) {
                    error_at(lloc->loc, "numeric literal too long (at most %d characters)", MAX_NUMBER);
                } else {
                    char text[MAX_NUMBER + 1];
                    memcpy(text, tok, (size_t)(e - tok));
                    text[e - tok] = '\0';
                    errno = 0;
                    lval->f = strtod(text, NULL);
                    if (isinf(lval->f) || (errno == ERANGE && lval->f != 0)) {
                        error_at(lloc->loc, "float literal out of range");
                        lval->f = 0;
                    }
                }
                TOKEN(FLOAT);
            }

            "<=" { TOKEN(LE); }
            ">=" { TOKEN(GE); }
            "==" { TOKEN(EQ); }
            "!=" { TOKEN(NE); }
            "&&" { TOKEN(ANDAND); }
            "||" { TOKEN(OROR); }
            "<<" { TOKEN(LSHIFT); }
            ">>" { TOKEN(RSHIFT); }
            "+=" { TOKEN(PLUSEQ); }
            "-=" { TOKEN(MINUSEQ); }
            "*=" { TOKEN(STAREQ); }
            ".." { TOKEN(DOTDOT); }
            "+:" { TOKEN(PLUSCOLON); }
            [(] { OPEN('('); }
            [[] { OPEN('['); }
            [{] { OPEN('{'); }
            [)] { CLOSE(')'); }
            [\]] { CLOSE(']'); }
            [}] { CLOSE('}'); }
            [-+*/%@<>!=,;:.&|^~] { TOKEN(tok[0]); }

            * {
                SKIP();
                error_at(lloc->loc, "stray byte 0x%02x in program", (unsigned char)tok[0]);
                continue;
            }
        */
#undef TOKEN
#undef OPEN
#undef CLOSE
#undef SKIP
    }
}
