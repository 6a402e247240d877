/* parse.y: the grammar (Bison, pure). Actions are one-line calls to the constructors at the end
 * of this file; the checker does everything semantic. Syntax errors name what was expected and
 * the parser recovers at ';' and '}' to report more. */
%code requires {
#include "tilec.h"

/* A token's or rule's extent: where it starts, and its byte range for assume()'s text. */
typedef struct { Loc loc; size_t off, end; Loc end_loc; } Span;

typedef struct Lexer {
    Arena *a;
    const char *src, *cur, *lim, *line_start;
    int line;
    int depth;             /* open brackets */
    bool stop;             /* a fatal lexical error: feed the parser end of input */
    Span last, prev;       /* the last token returned, and the one before it */
    Program *prog;
} Lexer;

/* An array growing inside the arena (parsing is the only user). */
typedef struct { void **v; int n, cap; } List;

/* The type part of a `var` declaration. */
typedef struct { ElemType t; bool shared; List *dims; Span span; } VarType;

/* Kernel clauses (grid, threads) and parameters while they are being collected. */
typedef struct {
    Expr *grid[MAX_GRID]; int ngrid; bool has_grid;
    Expr *threads;
    bool broken;           /* a syntax error inside: do not complain about what is missing */
} Clauses;
}

%code provides {
void lexer_init(Lexer *lx, Arena *a);
int yylex(YYSTYPE *lval, YYLTYPE *lloc, Lexer *lx);
}

%code {
#include <math.h>
#include <string.h>

static void yyerror(YYLTYPE *loc, Lexer *lx, const char *msg);

static List *list_add(Lexer *lx, List *l, void *x);
static Expr *new_expr(Lexer *lx, ExprKind k, Span s);
static Expr *new_int(Lexer *lx, Span s, int64_t v);
static Expr *new_float(Lexer *lx, Span s, double v);
static Expr *new_bool(Lexer *lx, Span s, bool v);
static Expr *new_name(Lexer *lx, Span s, const char *name);
static Expr *new_block_id(Lexer *lx, Span s, const char *field, Span fs);
static Expr *new_member(Lexer *lx, Span s, Expr *a, const char *field, Span fs);
static Expr *new_unary(Lexer *lx, Span s, int op, Expr *a);
static Expr *new_binary(Lexer *lx, Span s, int op, Expr *a, Expr *b);
static Expr *new_call(Lexer *lx, Span s, const char *name, List *args);
static Expr *new_named_arg(Lexer *lx, Span s, const char *name, Expr *value);
static Expr *new_cast(Lexer *lx, Span s, ElemType to, Expr *a);
static Expr *new_index(Lexer *lx, Span s, const char *name, List *subs, Expr *fill);
static Index *new_subscript(Lexer *lx, Span s, Expr *start, Expr *width);
static Stmt *new_stmt(Lexer *lx, StmtKind k, Span s);
static Stmt *new_let(Lexer *lx, Span s, const char *name, ElemType t, Expr *init);
static VarType *new_vartype(Lexer *lx, Span s, bool shared, ElemType t, List *dims);
static Stmt *new_var(Lexer *lx, Span s, const char *name, VarType *vt, Expr *init);
static Stmt *new_assign(Lexer *lx, Span s, Expr *lhs, int op, Expr *rhs);
static Stmt *new_for(Lexer *lx, Span s, const char *var, Expr *lo, Expr *hi, Expr *step,
                     Expr *pipeline, Stmt *body);
static Stmt *new_if(Lexer *lx, Span s, Expr *cond, Stmt *then, Stmt *els);
static Stmt *new_atomic(Lexer *lx, Span s, int op, Expr *target, Expr *value);
static Stmt *new_assume(Lexer *lx, Span s, Expr *cond, Span cs);
static Stmt *new_call_stmt(Lexer *lx, Span s, const char *name, Expr *arg, Span as);
static Stmt *new_block(Lexer *lx, Span s, List *stmts);
static Stmt *misplaced(Lexer *lx, Span s, const char *what);
static Clauses *new_clauses(Lexer *lx);
static Clauses *add_grid(Lexer *lx, Span s, Clauses *c, List *exprs);
static Clauses *add_threads(Lexer *lx, Span s, Clauses *c, Expr *e);
static Param *new_param(Lexer *lx, Span s, const char *name, ElemType t, List *dims, List *strides,
                        bool tensor);
static Kernel *new_kernel(Lexer *lx, Span s, const char *name, List *params, Clauses *c,
                          Stmt *body);
static void add_const(Lexer *lx, Span s, const char *name, Expr *value);
static void add_kernel(Lexer *lx, Kernel *k);

#define YYLLOC_DEFAULT(Cur, Rhs, N)                                  \
    do {                                                             \
        if (N) {                                                     \
            (Cur).loc = YYRHSLOC(Rhs, 1).loc;                        \
            (Cur).off = YYRHSLOC(Rhs, 1).off;                        \
            (Cur).end = YYRHSLOC(Rhs, N).end;                        \
            (Cur).end_loc = YYRHSLOC(Rhs, N).end_loc;                \
        } else {                                                     \
            (Cur).loc = (Cur).end_loc = YYRHSLOC(Rhs, 0).end_loc;    \
            (Cur).off = (Cur).end = YYRHSLOC(Rhs, 0).end;            \
        }                                                            \
    } while (0)
}

%define api.pure full
%define api.location.type {Span}
%define parse.error custom
%define parse.lac full
%locations
%param {Lexer *lx}

%union {
    int64_t i;
    double f;
    const char *s;
    ElemType t;
    int op;
    Expr *e;
    Stmt *st;
    List *l;
    Index *ix;
    VarType *vt;
    Clauses *cl;
    Param *p;
    Kernel *k;
}

%token <s> IDENT "identifier"
%token <i> INT "integer literal"
%token <f> FLOAT "float literal"
%token <t> TYPE "type"
%token CONST "'const'" KERNEL "'kernel'" GRID "'grid'" THREADS "'threads'" STRIDES "'strides'"
%token LET "'let'" VAR "'var'" SHARED "'shared'" FOR "'for'" IN "'in'" STEP "'step'"
%token PIPELINE "'pipeline'" IF "'if'" ELSE "'else'" ATOMIC_ADD "'atomic_add'"
%token ATOMIC_MAX "'atomic_max'" ASSUME "'assume'" BLOCK "'block'" TRUE "'true'"
%token FALSE "'false'" INF "'inf'" TF32 "'tf32'"
%token LE "'<='" GE "'>='" EQ "'=='" NE "'!='" ANDAND "'&&'" OROR "'||'"
%token LSHIFT "'<<'" RSHIFT "'>>'"
%token PLUSEQ "'+='" MINUSEQ "'-='" STAREQ "'*='" DOTDOT "'..'" PLUSCOLON "'+:'"

%type <e> expr unary primary atom fill index opt_fill opt_step opt_pipeline opt_init arg
%type <l> exprs opt_args args subscripts stmts opt_params params opt_strides
%type <ix> subscript
%type <st> stmt block if_stmt opt_else
%type <vt> var_type
%type <t> opt_let_type
%type <op> assign_op
%type <cl> clauses
%type <p> param
%type <k> kernel

%left OROR
%left ANDAND
%left EQ NE
%left '<' '>' LE GE
/* bit operations bind tighter than comparisons (as in Python, not C): x & 1 == 0 is (x & 1) == 0 */
%left '|'
%left '^'
%left '&'
%left LSHIFT RSHIFT
%left '+' '-'
%left '*' '/' '%' '@'

%%

/* After a syntax error outside any kernel body, parsing resumes at the next 'const', 'kernel' or
 * ';', or at the next '{' whose block is then parsed (and checked for syntax) on its own. */
program:
      %empty
    | program item
    | program error item
    | program error ';'
    | program error '}'
    | program error block
    ;

item:
      const_decl
    | kernel                            { if ($1) add_kernel(lx, $1); }
    ;

const_decl:
      CONST IDENT '=' expr ';'          { add_const(lx, @2, $2, $4); }
    ;

kernel:
      KERNEL IDENT '(' opt_params ')' clauses block   { $$ = new_kernel(lx, @2, $2, $4, $6, $7); }
    | KERNEL IDENT error block          { $$ = NULL; }
    ;

opt_params:
      %empty                            { $$ = NULL; }
    | params
    ;

params:
      param                             { $$ = list_add(lx, NULL, $1); }
    | params ',' param                  { $$ = list_add(lx, $1, $3); }
    ;

param:
      IDENT ':' TYPE                    { $$ = new_param(lx, @1, $1, $3, NULL, NULL, false); }
    | IDENT ':' TYPE '[' exprs ']' opt_strides
                                        { $$ = new_param(lx, @1, $1, $3, $5, $7, true); }
    ;

opt_strides:
      %empty                            { $$ = NULL; }
    | STRIDES '(' exprs ')'             { $$ = $3; }
    ;

clauses:
      %empty                            { $$ = new_clauses(lx); }
    | clauses GRID '(' exprs ')'        { $$ = add_grid(lx, @2, $1, $4); }
    | clauses THREADS '(' expr ')'      { $$ = add_threads(lx, @2, $1, $4); }
    | clauses error                     { $$ = $1; $$->broken = true; }
    ;

block:
      '{' stmts '}'                     { $$ = new_block(lx, @1, $2); }
    | '{' stmts error '}'               { $$ = new_block(lx, @1, $2); }
    ;

stmts:
      %empty                            { $$ = NULL; }
    | stmts stmt                        { $$ = $2 ? list_add(lx, $1, $2) : $1; }
    ;

stmt:
      LET IDENT opt_let_type '=' expr ';'         { $$ = new_let(lx, @2, $2, $3, $5); }
    | VAR IDENT var_type opt_init ';'             { $$ = new_var(lx, @2, $2, $3, $4); }
    | IDENT assign_op expr ';'                    { $$ = new_assign(lx, @1, new_name(lx, @1, $1), $2, $3); }
    | index assign_op expr ';'                    { $$ = new_assign(lx, @1, $1, $2, $3); }
    | FOR IDENT IN expr DOTDOT expr opt_step opt_pipeline block
                                                  { $$ = new_for(lx, @2, $2, $4, $6, $7, $8, $9); }
    | if_stmt
    | ATOMIC_ADD '(' index ',' expr ')' ';'       { $$ = new_atomic(lx, @1, '+', $3, $5); }
    | ATOMIC_MAX '(' index ',' expr ')' ';'       { $$ = new_atomic(lx, @1, 'M', $3, $5); }
    | ASSUME '(' expr ')' ';'                     { $$ = new_assume(lx, @1, $3, @3); }
    | IDENT '(' expr ')' ';'                      { $$ = new_call_stmt(lx, @1, $1, $3, @3); }
    | block
    | CONST IDENT '=' expr ';'                    { $$ = misplaced(lx, @1, "const declarations"); }
    | kernel                                      { $$ = misplaced(lx, @1, "kernels"); }
    | error ';'                                   { $$ = NULL; }
    ;

opt_let_type:
      %empty                            { $$ = TY_NONE; }
    | ':' TYPE                          { $$ = $2; }
    ;

var_type:
      %empty                            { $$ = NULL; }
    | ':' TYPE                          { $$ = new_vartype(lx, @2, false, $2, NULL); }
    | ':' TYPE '[' exprs ']'            { $$ = new_vartype(lx, @2, false, $2, $4); }
    | ':' SHARED TYPE                   { $$ = new_vartype(lx, @2, true, $3, NULL); }
    | ':' SHARED TYPE '[' exprs ']'     { $$ = new_vartype(lx, @2, true, $3, $5); }
    ;

opt_init:
      %empty                            { $$ = NULL; }
    | '=' expr                          { $$ = $2; }
    ;

assign_op:
      '='                               { $$ = '='; }
    | PLUSEQ                            { $$ = '+'; }
    | MINUSEQ                           { $$ = '-'; }
    | STAREQ                            { $$ = '*'; }
    ;

opt_step:
      %empty                            { $$ = NULL; }
    | STEP expr                         { $$ = $2; }
    ;

opt_pipeline:
      %empty                            { $$ = NULL; }
    | PIPELINE '(' expr ')'             { $$ = $3; }
    ;

if_stmt:
      IF expr block opt_else            { $$ = new_if(lx, @1, $2, $3, $4); }
    ;

opt_else:
      %empty                            { $$ = NULL; }
    | ELSE block                        { $$ = $2; }
    | ELSE if_stmt                      { $$ = $2; }
    ;

expr:
      unary
    | expr OROR expr                    { $$ = new_binary(lx, @2, OP_OR, $1, $3); }
    | expr ANDAND expr                  { $$ = new_binary(lx, @2, OP_AND, $1, $3); }
    | expr EQ expr                      { $$ = new_binary(lx, @2, OP_EQ, $1, $3); }
    | expr NE expr                      { $$ = new_binary(lx, @2, OP_NE, $1, $3); }
    | expr '<' expr                     { $$ = new_binary(lx, @2, '<', $1, $3); }
    | expr '>' expr                     { $$ = new_binary(lx, @2, '>', $1, $3); }
    | expr LE expr                      { $$ = new_binary(lx, @2, OP_LE, $1, $3); }
    | expr GE expr                      { $$ = new_binary(lx, @2, OP_GE, $1, $3); }
    | expr '|' expr                     { $$ = new_binary(lx, @2, '|', $1, $3); }
    | expr '^' expr                     { $$ = new_binary(lx, @2, '^', $1, $3); }
    | expr '&' expr                     { $$ = new_binary(lx, @2, '&', $1, $3); }
    | expr LSHIFT expr                  { $$ = new_binary(lx, @2, OP_LSHIFT, $1, $3); }
    | expr RSHIFT expr                  { $$ = new_binary(lx, @2, OP_RSHIFT, $1, $3); }
    | expr '+' expr                     { $$ = new_binary(lx, @2, '+', $1, $3); }
    | expr '-' expr                     { $$ = new_binary(lx, @2, '-', $1, $3); }
    | expr '*' expr                     { $$ = new_binary(lx, @2, '*', $1, $3); }
    | expr '/' expr                     { $$ = new_binary(lx, @2, '/', $1, $3); }
    | expr '%' expr                     { $$ = new_binary(lx, @2, '%', $1, $3); }
    | expr '@' expr                     { $$ = new_binary(lx, @2, '@', $1, $3); }
    ;

unary:
      primary
    | '-' unary                         { $$ = new_unary(lx, @1, '-', $2); }
    | '!' unary                         { $$ = new_unary(lx, @1, '!', $2); }
    | '~' unary                         { $$ = new_unary(lx, @1, '~', $2); }
    ;

/* x.T binds tighter than anything; a fill value (`else -inf`) takes none, so `W[...] else 0 .T`
   transposes the window */
primary:
      atom
    | primary '.' IDENT                 { $$ = new_member(lx, @2, $1, $3, @3); }
    ;

atom:
      INT                               { $$ = new_int(lx, @1, $1); }
    | FLOAT                             { $$ = new_float(lx, @1, $1); }
    | INF                               { $$ = new_float(lx, @1, INFINITY); }
    | TRUE                              { $$ = new_bool(lx, @1, true); }
    | FALSE                             { $$ = new_bool(lx, @1, false); }
    | IDENT                             { $$ = new_name(lx, @1, $1); }
    | IDENT '(' opt_args ')'            { $$ = new_call(lx, @1, $1, $3); }
    | TYPE '(' expr ')'                 { $$ = new_cast(lx, @1, $1, $3); }
    | TYPE                              { $$ = new_cast(lx, @1, $1, NULL); }   /* bitcast(x, u32) */
    | TF32 '(' expr ')'                 { $$ = new_cast(lx, @1, TY_TF32, $3); }
    | index opt_fill                    { $$ = $2 ? ($1->fill = $2, $1) : $1; }
    | BLOCK '.' IDENT                   { $$ = new_block_id(lx, @1, $3, @3); }
    | '(' expr ')'                      { $$ = $2; }
    ;

index:
      IDENT '[' subscripts ']'          { $$ = new_index(lx, @1, $1, $3, NULL); }
    ;

opt_fill:
      %empty                            { $$ = NULL; }
    | ELSE fill                         { $$ = $2; }
    ;

fill:
      atom
    | '-' fill                          { $$ = new_unary(lx, @1, '-', $2); }
    | '!' fill                          { $$ = new_unary(lx, @1, '!', $2); }
    ;

subscripts:
      subscript                         { $$ = list_add(lx, NULL, $1); }
    | subscripts ',' subscript          { $$ = list_add(lx, $1, $3); }
    ;

subscript:
      expr                              { $$ = new_subscript(lx, @1, $1, NULL); }
    | expr PLUSCOLON expr               { $$ = new_subscript(lx, @1, $1, $3); }
    | ':'                               { $$ = new_subscript(lx, @1, NULL, NULL); }
    ;

opt_args:
      %empty                            { $$ = NULL; }
    | args
    ;

args:
      arg                               { $$ = list_add(lx, NULL, $1); }
    | args ',' arg                      { $$ = list_add(lx, $1, $3); }
    ;

arg:
      expr
    | IDENT '=' expr                    { $$ = new_named_arg(lx, @1, $1, $3); }
    ;

exprs:
      expr                              { $$ = list_add(lx, NULL, $1); }
    | exprs ',' expr                    { $$ = list_add(lx, $1, $3); }
    ;

%%

/* ---------------------------------------------------------------- syntax errors */

/* What a token kind is called in "expected ..." messages: the alias without Bison's quotes. */
static const char *symbol_text(yysymbol_kind_t k)
{
    static char buf[64];
    const char *n = yysymbol_name(k);
    size_t len = strlen(n);
    if (len >= 2 && n[0] == '"' && n[len - 1] == '"' && len - 2 < sizeof buf) {
        memcpy(buf, n + 1, len - 2);
        buf[len - 2] = '\0';
        return buf;
    }
    return n;
}

static bool name_in(const char *name, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(name, *set))
            return true;
    return false;
}

static const char *const expr_starts[] = {
    "identifier", "integer literal", "float literal", "'inf'", "'true'", "'false'", "type",
    "'tf32'", "'block'", "'('", "'!'", "'-'", "'~'", NULL,
};
static const char *const stmt_starts[] = {
    "'let'", "'var'", "'for'", "'if'", "'atomic_add'", "'atomic_max'", "'assume'", NULL,
};
static const char *const operators[] = {
    "'||'", "'&&'", "'=='", "'!='", "'<='", "'>='", "'<'", "'>'", "'+'", "'-'", "'*'", "'/'",
    "'%'", "'@'", "'&'", "'|'", "'^'", "'<<'", "'>>'", NULL,
};

/* "expected ';' before 'x'": the expected tokens, with the many that can start an expression or
 * a statement folded into one word, and operators left out when something else fits. */
static int yyreport_syntax_error(const yypcontext_t *ctx, Lexer *lx)
{
    if (lx->stop || diag.capped) {
        diag.nerrors++;    /* keep the count honest; the reason was already reported */
        return 0;
    }
    yysymbol_kind_t exp[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
    if (n < 0)
        n = 0;
    const char *given[YYNTOKENS];
    bool want_stmt = false;
    for (int i = 0; i < n; i++) {
        given[i] = symbol_text(exp[i]);
        given[i] = arena_strndup(lx->a, given[i], strlen(given[i]));
        if (name_in(given[i], stmt_starts))
            want_stmt = true;
    }
    bool want_expr = false, want_op = false;
    const char *names[YYNTOKENS + 3];
    int nnames = 0;
    bool want_dot = false;   /* '.T' may follow any operand: named only when nothing else fits */
    for (int i = 0; i < n; i++) {
        const char *g = given[i];
        if (exp[i] == YYSYMBOL_YYerror || name_in(g, stmt_starts))
            continue;
        if (!strcmp(g, "'.'")) {
            want_dot = true;
            continue;
        }
        if (want_stmt && (!strcmp(g, "identifier") || !strcmp(g, "'{'") ||
                          !strcmp(g, "'const'") || !strcmp(g, "'kernel'")))
            continue;   /* a statement can start with these: "statement" says it */
        if (name_in(g, operators) && strcmp(g, "'-'"))
            want_op = true;
        else if (name_in(g, expr_starts))
            want_expr = true;
        else
            names[nnames++] = g;
    }
    if (want_op) {
        /* After a complete operand: '(' '[' would only continue a call or an index, and the
         * tokens that start an expression are not what is missing. */
        want_expr = false;
        int k = 0;
        for (int i = 0; i < nnames; i++)
            if (strcmp(names[i], "'('") && strcmp(names[i], "'['"))
                names[k++] = names[i];
        nnames = k;
    }
    Buf what = {0};
    if (want_stmt)
        names[nnames++] = "statement";
    if (want_expr)
        names[nnames++] = "expression";
    if (want_op && nnames == 0)
        names[nnames++] = "operator";
    if (want_dot && nnames == 0)
        names[nnames++] = "'.'";
    for (int i = 0; i < nnames; i++) {
        if (i > 0)
            buf_puts(&what, i == nnames - 1 ? " or " : ", ");
        buf_puts(&what, names[i]);
    }

    /* The unexpected token, as written. */
    yysymbol_kind_t got = yypcontext_token(ctx);
    const YYLTYPE *at = yypcontext_location(ctx);
    char found[48];
    if (got == YYSYMBOL_YYEOF) {
        snprintf(found, sizeof found, "end of file");
    } else {
        size_t len = at->end - at->off;
        if (len > 20)
            snprintf(found, sizeof found, "'%.20s...'", lx->src + at->off);
        else
            snprintf(found, sizeof found, "'%.*s'", (int)len, lx->src + at->off);
    }

    /* A token missing at the end of a line is reported just after the line's last token. */
    Loc loc = at->loc;
    if (lx->prev.end > 0 && (got == YYSYMBOL_YYEOF || at->loc.line > lx->prev.end_loc.line))
        loc = lx->prev.end_loc;

    /* Two mistakes worth naming: a type the language does not have where a type goes, and a
     * `while` loop (read as a name, so the error lands on what follows it). */
    bool want_type = false;
    for (int i = 0; i < n; i++)
        want_type |= !strcmp(given[i], "type");
    size_t plen = lx->prev.end - lx->prev.off;
    if (want_type && got == YYSYMBOL_IDENT) {
        Buf types = {0};
        for (int t = 0; t < TY_COUNT; t++)
            if (t != TY_NONE && t != TY_TF32)
                buf_printf(&types, "%s%s", types.len ? ", " : "", type_name((ElemType)t));
        error_at(at->loc, "unknown element type %s (the types are %s)", found, types.s);
        buf_free(&types);
    } else if (lx->prev.end > 0 && plen == 5 && !strncmp(lx->src + lx->prev.off, "while", 5)) {
        Loc wloc = lx->prev.loc;
        error_at(wloc, "there is no 'while' loop: a loop has bounds, `for i in 0 .. N` (or "
                       "`for i in 0 .. N step S`)");
    } else if (nnames > 0 && nnames <= 4)
        error_at(loc, "expected %s before %s", what.s, found);
    else
        error_at(loc, "unexpected %s", found);
    buf_free(&what);
    return 0;
}

static void yyerror(YYLTYPE *loc, Lexer *lx, const char *msg)
{
    if (lx->stop || diag.capped) {
        diag.nerrors++;
        return;
    }
    /* Only "memory exhausted" reaches here: the parser's stack limit (YYMAXDEPTH). */
    if (strstr(msg, "exhausted"))
        error_at(loc->loc, "program nested too deeply");
    else
        error_at(loc->loc, "%s", msg);
    lx->stop = true;
}

/* ---------------------------------------------------------------- constructors */

static List *list_add(Lexer *lx, List *l, void *x)
{
    if (!l)
        l = arena_alloc(lx->a, sizeof *l);
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        void **v = arena_alloc(lx->a, (size_t)cap * sizeof *v);
        if (l->n)
            memcpy(v, l->v, (size_t)l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return l;
}

static int list_len(List *l) { return l ? l->n : 0; }

static Expr *new_expr(Lexer *lx, ExprKind k, Span s)
{
    Expr *e = arena_alloc(lx->a, sizeof *e);
    e->kind = k;
    e->loc = s.loc;
    e->axis = -1;
    return e;
}

static Expr *new_int(Lexer *lx, Span s, int64_t v)
{
    Expr *e = new_expr(lx, E_INT, s);
    e->ival = v;
    return e;
}

static Expr *new_float(Lexer *lx, Span s, double v)
{
    Expr *e = new_expr(lx, E_FLOAT, s);
    e->fval = v;
    return e;
}

static Expr *new_bool(Lexer *lx, Span s, bool v)
{
    Expr *e = new_expr(lx, E_BOOL, s);
    e->ival = v;
    return e;
}

static Expr *new_name(Lexer *lx, Span s, const char *name)
{
    Expr *e = new_expr(lx, E_NAME, s);
    e->name = name;
    return e;
}

/* x.T: the transpose of a 2-D window (check.c turns it into a window of a transposed view). */
static Expr *new_member(Lexer *lx, Span s, Expr *a, const char *field, Span fs)
{
    Expr *e = new_expr(lx, E_TRANSPOSE, s);
    e->a = a;
    if (strcmp(field, "T"))
        error_at(fs.loc, "'.%s' is not a member of a tile; '.T' (the transpose) is the only one", field);
    return e;
}

static Expr *new_block_id(Lexer *lx, Span s, const char *field, Span fs)
{
    Expr *e = new_expr(lx, E_BLOCK, s);
    if (!strcmp(field, "x") || !strcmp(field, "y") || !strcmp(field, "z"))
        e->ival = field[0] - 'x';
    else
        error_at(fs.loc, "'block' has fields x, y and z, not '%s'", field);
    return e;
}

static Expr *new_unary(Lexer *lx, Span s, int op, Expr *a)
{
    Expr *e = new_expr(lx, E_UNARY, s);
    e->op = op;
    e->a = a;
    return e;
}

static Expr *new_binary(Lexer *lx, Span s, int op, Expr *a, Expr *b)
{
    Expr *e = new_expr(lx, E_BINARY, s);
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

static Expr *new_call(Lexer *lx, Span s, const char *name, List *args)
{
    Expr *e = new_expr(lx, E_CALL, s);
    e->name = name;
    e->nargs = list_len(args);
    e->args = e->nargs ? (Expr **)args->v : NULL;
    return e;
}

/* `axis = K` is kept as an E_BINARY '=' of an E_NAME and the value until check takes it out of
 * the argument list and into Expr.axis. */
static Expr *new_named_arg(Lexer *lx, Span s, const char *name, Expr *value)
{
    return new_binary(lx, s, '=', new_name(lx, s, name), value);
}

static Expr *new_cast(Lexer *lx, Span s, ElemType to, Expr *a)
{
    Expr *e = new_expr(lx, E_CAST, s);
    e->to = to;
    e->a = a;
    return e;
}

static Expr *new_index(Lexer *lx, Span s, const char *name, List *subs, Expr *fill)
{
    Expr *e = new_expr(lx, E_INDEX, s);
    e->base = new_name(lx, s, name);
    e->name = name;
    e->nidx = list_len(subs);
    e->idx = arena_alloc(lx->a, (size_t)(e->nidx ? e->nidx : 1) * sizeof *e->idx);
    for (int i = 0; i < e->nidx; i++)
        e->idx[i] = *(Index *)subs->v[i];
    e->fill = fill;
    return e;
}

static Index *new_subscript(Lexer *lx, Span s, Expr *start, Expr *width)
{
    Index *ix = arena_alloc(lx->a, sizeof *ix);
    ix->start = start;
    ix->width_expr = width;
    ix->loc = s.loc;
    return ix;
}

static Stmt *new_stmt(Lexer *lx, StmtKind k, Span s)
{
    Stmt *st = arena_alloc(lx->a, sizeof *st);
    st->kind = k;
    st->loc = s.loc;
    st->decl_rank = -1;
    return st;
}

static Stmt *new_let(Lexer *lx, Span s, const char *name, ElemType t, Expr *init)
{
    Stmt *st = new_stmt(lx, S_LET, s);
    st->name = name;
    st->decl_type = t;
    st->decl_rank = t == TY_NONE ? -1 : 0;
    st->init = init;
    return st;
}

static VarType *new_vartype(Lexer *lx, Span s, bool shared, ElemType t, List *dims)
{
    VarType *vt = arena_alloc(lx->a, sizeof *vt);
    vt->t = t;
    vt->shared = shared;
    vt->dims = dims;
    vt->span = s;
    return vt;
}

static Stmt *new_var(Lexer *lx, Span s, const char *name, VarType *vt, Expr *init)
{
    Stmt *st = new_stmt(lx, S_VAR, s);
    st->name = name;
    st->init = init;
    if (vt) {
        st->decl_type = vt->t;
        st->is_shared = vt->shared;
        st->decl_rank = list_len(vt->dims);
        if (st->decl_rank > MAX_TILE_RANK) {
            error_at(((Expr *)vt->dims->v[MAX_TILE_RANK])->loc,
                     "a tile has at most %d dimensions", MAX_TILE_RANK);
            st->decl_rank = MAX_TILE_RANK;
        }
        for (int i = 0; i < st->decl_rank; i++)
            st->decl_dims[i] = vt->dims->v[i];
    }
    return st;
}

static Stmt *new_assign(Lexer *lx, Span s, Expr *lhs, int op, Expr *rhs)
{
    Stmt *st = new_stmt(lx, S_ASSIGN, s);
    st->lhs = lhs;
    st->op = op;
    st->rhs = rhs;
    return st;
}

static Stmt *new_for(Lexer *lx, Span s, const char *var, Expr *lo, Expr *hi, Expr *step,
                     Expr *pipeline, Stmt *body)
{
    Stmt *st = new_stmt(lx, S_FOR, s);
    st->name = var;
    st->lo = lo;
    st->hi = hi;
    st->step = step;
    st->pipeline_expr = pipeline;
    st->then = body;
    return st;
}

static Stmt *new_if(Lexer *lx, Span s, Expr *cond, Stmt *then, Stmt *els)
{
    Stmt *st = new_stmt(lx, S_IF, s);
    st->cond = cond;
    st->then = then;
    st->els = els;
    return st;
}

static Stmt *new_atomic(Lexer *lx, Span s, int op, Expr *target, Expr *value)
{
    Stmt *st = new_stmt(lx, S_ATOMIC, s);
    st->op = op;
    st->lhs = target;
    st->rhs = value;
    return st;
}

/* The source of an assume's condition as the launcher's message shows it: one line of printable
 * ASCII in which each comment and each run of white space is one space, at most MAX_ASSUME_TEXT
 * bytes (then "..."). It goes into the metadata, a line of its own, and into a C comment
 * (emit_c.c): nothing of a comment may reach either, since a comment may hold a newline and a
 * //@ line, or a star and a slash. */
static const char *assume_text(Arena *a, const char *s, size_t n)
{
    char *t = arena_alloc(a, MAX_ASSUME_TEXT + 4);
    size_t len = 0;
    bool space = false;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '/' && i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '*')) {
            if (s[i + 1] == '/') {
                while (i < n && s[i] != '\n')
                    i++;
            } else {
                for (i += 2; i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/'); i++)
                    ;
                i += 2;
            }
            space = true;
            continue;
        }
        i++;
        if (c <= ' ' || c >= 0x7f) {   /* white space; nothing else outside comments lexes */
            space = true;
            continue;
        }
        if (len + (space && len) + 1 > MAX_ASSUME_TEXT) {
            memcpy(t + len, "...", 3);
            len += 3;
            break;
        }
        if (space && len)
            t[len++] = ' ';
        space = false;
        t[len++] = (char)c;
    }
    t[len] = '\0';
    return t;
}

static Stmt *new_assume(Lexer *lx, Span s, Expr *cond, Span cs)
{
    Stmt *st = new_stmt(lx, S_ASSUME, s);
    st->cond = cond;
    st->text = assume_text(lx->a, lx->src + cs.off, cs.end - cs.off);
    return st;
}

/* A call standing as a statement: print(x) is the only one (a builtin's value would be lost). */
static Stmt *new_call_stmt(Lexer *lx, Span s, const char *name, Expr *arg, Span as)
{
    if (strcmp(name, "print")) {
        error_at(s.loc, "only print(x) can stand as a statement; '%s(...)' computes a value: "
                 "assign it, e.g. let y = %s(...);", name, name);
        return NULL;
    }
    Stmt *st = new_stmt(lx, S_PRINT, s);
    st->init = arg;
    st->text = assume_text(lx->a, lx->src + as.off, as.end - as.off);
    return st;
}

static Stmt *new_block(Lexer *lx, Span s, List *stmts)
{
    Stmt *st = new_stmt(lx, S_BLOCK, s);
    st->nbody = list_len(stmts);
    st->body = st->nbody ? (Stmt **)stmts->v : NULL;
    return st;
}

static Stmt *misplaced(Lexer *lx, Span s, const char *what)
{
    (void)lx;
    error_at(s.loc, "%s are only allowed at the top level of a file", what);
    return NULL;
}

static Clauses *new_clauses(Lexer *lx)
{
    return arena_alloc(lx->a, sizeof(Clauses));
}

static Clauses *add_grid(Lexer *lx, Span s, Clauses *c, List *exprs)
{
    (void)lx;
    if (c->has_grid)
        error_at(s.loc, "grid(...) given twice");
    c->has_grid = true;
    int n = list_len(exprs);
    if (n > MAX_GRID) {
        error_at(((Expr *)exprs->v[MAX_GRID])->loc, "grid(...) takes 1 to %d expressions", MAX_GRID);
        n = MAX_GRID;
    }
    c->ngrid = n;
    for (int i = 0; i < n; i++)
        c->grid[i] = exprs->v[i];
    return c;
}

static Clauses *add_threads(Lexer *lx, Span s, Clauses *c, Expr *e)
{
    (void)lx;
    if (c->threads)
        error_at(s.loc, "threads(...) given twice");
    c->threads = e;
    return c;
}

static Param *new_param(Lexer *lx, Span s, const char *name, ElemType t, List *dims, List *strides,
                        bool tensor)
{
    Param *p = arena_alloc(lx->a, sizeof *p);
    p->name = name;
    p->loc = s.loc;
    p->type = t;
    p->is_tensor = tensor;
    p->rank = list_len(dims);
    if (p->rank > MAX_TENSOR_RANK) {
        error_at(((Expr *)dims->v[MAX_TENSOR_RANK])->loc, "a tensor has at most %d dimensions",
                 MAX_TENSOR_RANK);
        p->rank = MAX_TENSOR_RANK;
    }
    for (int i = 0; i < p->rank; i++)
        p->dims[i] = dims->v[i];
    if (strides) {
        p->has_strides = true;
        if (strides->n != list_len(dims))
            error_at(((Expr *)strides->v[0])->loc, "%d strides given for a tensor of rank %d",
                     strides->n, list_len(dims));
        for (int i = 0; i < p->rank && i < strides->n; i++)
            p->strides[i] = strides->v[i];
        for (int i = strides->n; i < p->rank; i++)
            p->strides[i] = new_int(lx, s, 1);   /* keeps later stages total after the error */
    }
    return p;
}

static Kernel *new_kernel(Lexer *lx, Span s, const char *name, List *params, Clauses *c,
                          Stmt *body)
{
    Kernel *k = arena_alloc(lx->a, sizeof *k);
    k->name = name;
    k->loc = s.loc;
    k->nparams = list_len(params);
    k->params = arena_alloc(lx->a, (size_t)(k->nparams ? k->nparams : 1) * sizeof *k->params);
    for (int i = 0; i < k->nparams; i++)
        k->params[i] = *(Param *)params->v[i];
    if (!c->has_grid && !c->broken)
        error_at(s.loc, "kernel '%s' has no grid(...) clause", name);
    k->ngrid = c->ngrid;
    for (int i = 0; i < c->ngrid; i++)
        k->grid[i] = c->grid[i];
    k->threads_expr = c->threads;
    k->body = body;
    return k;
}

static void add_const(Lexer *lx, Span s, const char *name, Expr *value)
{
    Program *p = lx->prog;
    if ((p->nconsts & (p->nconsts - 1)) == 0) {   /* grow at powers of two */
        ConstDecl *v = arena_alloc(lx->a, (size_t)(p->nconsts ? 2 * p->nconsts : 1) * sizeof *v);
        if (p->nconsts)
            memcpy(v, p->consts, (size_t)p->nconsts * sizeof *v);
        p->consts = v;
    }
    p->consts[p->nconsts++] = (ConstDecl){.name = name, .loc = s.loc, .value = value};
}

static void add_kernel(Lexer *lx, Kernel *k)
{
    Program *p = lx->prog;
    if ((p->nkernels & (p->nkernels - 1)) == 0) {
        Kernel **v = arena_alloc(lx->a, (size_t)(p->nkernels ? 2 * p->nkernels : 1) * sizeof *v);
        if (p->nkernels)
            memcpy(v, p->kernels, (size_t)p->nkernels * sizeof *v);
        p->kernels = v;
    }
    p->kernels[p->nkernels++] = k;
}

Program *parse_program(Arena *a)
{
    Lexer lx;
    lexer_init(&lx, a);
    lx.prog = arena_alloc(a, sizeof *lx.prog);
    yyparse(&lx);
    return lx.prog;
}
