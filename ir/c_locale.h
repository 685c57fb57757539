/* The C locale for the text rnncc writes and reads back (number literals of a cell, generated CUDA,
 * dumps, cache entries): an embedding program's LC_NUMERIC (a decimal comma) must not change them.
 * Key idea: a scope switches only the calling thread (uselocale), so other threads are untouched. */
#ifndef RNNCC_C_LOCALE_H
#define RNNCC_C_LOCALE_H
#include <locale.h>

typedef struct CLocaleScope {
    locale_t c;     /* the C locale object; (locale_t)0 where it could not be had */
    locale_t saved; /* the thread's locale before the scope */
} CLocaleScope;

/* Makes the C locale the calling thread's until c_locale_leave; scopes nest. */
void c_locale_enter(CLocaleScope *s);
/* Gives the thread back the locale it had at c_locale_enter. */
void c_locale_leave(CLocaleScope *s);
/* strtod in the C locale ('.' the decimal point whatever the thread's locale); errno as strtod leaves it. */
double c_strtod(const char *text, char **end);

#endif
