#!/usr/bin/env bash
# `make install` into a temporary DESTDIR, checked as a user would use it: every file in place, DESTDIR in
# no installed file, rnncc.pc read by pkg-config, the man pages well-formed (groff -ww), examples/embed_lstm.c
# built against the installed header and libraries (shared and static) and run (77: no CUDA device), the
# installed CLI run; the shared library exporting rnncc_* alone; the example linked against the build directory's
# library too; then `make uninstall` leaves no file behind.
# Usage: bash tests/install.sh [BUILD_DIR [CC [LDFLAGS]]]   (make test passes its own)
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-build}; CC=${2:-cc}; LDF=${3:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest prefix=/opt/rnncc-test
root=$dest$prefix
fail() { echo "install.sh: FAILED: $*" >&2; exit 1; }
version=$(sed -n 's/^VERSION *:= *//p' Makefile)
# run under `make -jN test`: the makes below keep the caller's variables (B, SAN, CC) but not its jobserver,
# whose descriptors a script does not pass on ("jobserver unavailable" otherwise)
MAKEFLAGS=$(printf '%s' "${MAKEFLAGS:-}" | sed -E 's/(^| )-j[0-9]*//; s/(^| )--jobserver-(auth|fds)=[^ ]*//')
export MAKEFLAGS

make -s --no-print-directory install B="$B" PREFIX=$prefix DESTDIR="$dest" > "$tmp/make.log" 2>&1 ||
    { cat "$tmp/make.log"; fail "make install"; }
for f in bin/rnncc lib/librnncc.a "lib/librnncc.so.$version" lib/librnncc.so.0 lib/librnncc.so include/rnncc.h \
         lib/pkgconfig/rnncc.pc share/man/man1/rnncc.1 share/man/man3/rnncc.3; do
    [ -e "$root/$f" ] || fail "$f is not installed"
done
[ "$(readlink "$root/lib/librnncc.so")" = librnncc.so.0 ] || fail "librnncc.so is not a link to librnncc.so.0"
readelf -d "$root/lib/librnncc.so.$version" | grep -q 'SONAME.*\[librnncc.so.0\]' || fail "librnncc.so has no soname librnncc.so.0"
if grep -rlF "$dest" "$root"; then fail "DESTDIR is written inside the installed files above"; fi
# the shared library exports the API alone (runtime/rnncc.map): no internal function a program could replace
internal=$(nm -D --defined-only "$root/lib/librnncc.so.$version" | awk '$3 !~ /^rnncc_/ { print $3 }' | head -5)
[ -z "$internal" ] || fail "librnncc.so exports internal symbols: $internal"
nm -D --defined-only "$root/lib/librnncc.so.$version" | grep -q ' T rnncc_model_create$' || fail "librnncc.so does not export rnncc_model_create"
grep -q "^prefix=$prefix\$" "$root/lib/pkgconfig/rnncc.pc" || fail "rnncc.pc's prefix is not $prefix"

pc() { PKG_CONFIG_PATH=$root/lib/pkgconfig pkg-config --define-variable=prefix="$root" "$@" rnncc; }
[ "$(pc --modversion)" = "$version" ] || fail "pkg-config --modversion: $(pc --modversion)"
for page in share/man/man1/rnncc.1 share/man/man3/rnncc.3; do
    out=$(groff -man -ww -z "$root/$page" 2>&1)
    [ -z "$out" ] || fail "$page: $out"
    ! grep -q '@VERSION@' "$root/$page" || fail "$page: @VERSION@ not replaced"
done
# rnncc(3)'s synopsis names every function of the header
for f in $(grep -oE '^[a-z_ ]+ \**rnncc_[a-z0-9_]+\(' runtime/rnncc.h | grep -oE 'rnncc_[a-z0-9_]+\(' | tr -d '('); do
    grep -q "$f(" "$root/share/man/man3/rnncc.3" || fail "rnncc(3) does not name $f"
done

# an embedding program, from the installed files only (cflags name no source directory; -lm: its own exp)
cflags=$(pc --cflags) || fail "pkg-config --cflags"
case " $cflags " in *" -I$PWD"*|*" -Iruntime "*) fail "rnncc.pc's Cflags name the source tree: $cflags" ;; esac
# shellcheck disable=SC2086
$CC -std=c11 -D_GNU_SOURCE $cflags -c examples/embed_lstm.c -o "$tmp/embed.o" || fail "compiling embed_lstm.c"
# shellcheck disable=SC2086
$CC $LDF "$tmp/embed.o" -o "$tmp/embed_shared" $(pc --libs) -Wl,-rpath,"$root/lib" -lm || fail "linking the shared library"
# shellcheck disable=SC2086
$CC $LDF "$tmp/embed.o" -o "$tmp/embed_static" $(pc --static --libs | sed 's/-lrnncc /-l:librnncc.a /') -lm ||
    fail "linking the static library"
ldd "$tmp/embed_shared" | grep -q "librnncc.so.0 => $root/lib/librnncc.so.0" || fail "embed_shared does not load the installed librnncc.so.0"
! ldd "$tmp/embed_static" | grep -q librnncc || fail "embed_static loads librnncc.so"
# linked against the build directory's library, as README's "From C" says (its librnncc.so.0 link found at run time)
# shellcheck disable=SC2086
$CC $LDF "$tmp/embed.o" -o "$tmp/embed_build" -L"$B" -lrnncc -Wl,-rpath,"$PWD/$B" $(pc --libs | sed 's/-lrnncc //') -lm ||
    fail "linking $B/librnncc.so"
ldd "$tmp/embed_build" | grep -q "librnncc.so.0 => $PWD/$B/librnncc.so.0" || fail "embed_build does not load $B/librnncc.so.0"
for exe in embed_shared embed_static embed_build; do
    "$tmp/$exe" > "$tmp/$exe.log" 2>&1; rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || { cat "$tmp/$exe.log"; fail "$exe exited $rc"; }
    echo "install.sh: $exe: exit $rc ($([ $rc -eq 0 ] && echo ran || echo 'no CUDA device'))"
done
[ "$("$root/bin/rnncc" --version)" = "rnncc $version" ] || fail "the installed rnncc --version"
"$root/bin/rnncc" check cells/lstm.cell || fail "the installed rnncc check"

make -s --no-print-directory uninstall B="$B" PREFIX=$prefix DESTDIR="$dest" || fail "make uninstall"
left=$(find "$root" \( -type f -o -type l \) | head)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "install.sh: ok (make install, pkg-config, man pages, the exports, an example built three ways, uninstall)"
