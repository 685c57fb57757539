# rnncc: one non-recursive GNU Makefile. All outputs go to $(B) (build/ by default).
#   make            library (build/librnncc.a, .so) and the CLI (build/rnncc)
#   make test       unit tests (GPU tests skip themselves where no GPU is present)
#   make demo       build, then check and dump cells/lstm.cell (and run it on a GPU if present)
#   make asan       the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz       bounded libFuzzer runs of parse + check, and of schedule + codegen (FUZZ_SECONDS each, default 60)
#   make golden-update   rewrite the golden files in tests/golden (review the diff)
#   make examples   build/examples/ (the JIT embedded in a C program)
#   make parity     build/parity/parity (PyTorch parity; run tests/parity/run.sh on a GPU machine; make test runs
#                   tests/parity/fake_check.sh: its reference mode without torch or a GPU)
#   make bench      build/bench/ (benchmarks against cuDNN; run bench/run.sh on a GPU machine)
#   make install PREFIX=/usr/local DESTDIR=   the CLI, the libraries, rnncc.h, rnncc.pc, man pages (uninstall: the reverse)
#   Missing build packages are installed by .ci/install-deps (as root) on first use.
#   V=1 shows full commands.

B        ?= build
CC       ?= cc
CUDA     ?= /usr/local/cuda
BISON    ?= bison
FLEX     ?= flex
VERSION  := 0.1.0
SOMAJOR  := 0

CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -Wall -Wextra -fPIC -D_GNU_SOURCE -DRNNCC_VERSION='"$(VERSION)"'
CPPFLAGS += -I. -Igrammar -Iruntime -I$(B)/grammar -I$(CUDA)/include -MMD -MP
# NVRTC compiles generated CUDA (no GPU needed); the CUDA runtime and cuBLAS run it.
CUDA_LIBDIR ?= $(CUDA)/lib64
LDLIBS   += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lnvrtc -lcublas -lcublasLt -lcudart -lm -lpthread -ldl
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ifdef SAN
CFLAGS  += $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

.DELETE_ON_ERROR:
.SUFFIXES:
.PHONY: all test demo asan fuzz golden-update clean examples bench install uninstall

# ---- sources, per module ------------------------------------------------------
IR_SRCS      := ir/arena.c ir/strbuf.c ir/c_locale.c ir/diag.c ir/ops.c ir/ir.c ir/build.c ir/dump.c ir/ref.c ir/ref_stack.c ir/sched.c ir/sched_fold.c ir/sched_layout.c ir/sched_dump.c ir/sched_exec.c ir/fold_projection.c ir/fold_rule.c ir/fold_exec.c
GRAMMAR_SRCS := grammar/ast.c grammar/parse.c
GRAMMAR_GEN  := $(B)/grammar/parser.c $(B)/grammar/lexer.c
CODEGEN_SRCS := codegen/emit.c codegen/cg_forward.c codegen/cg_backward.c codegen/cg_persist_plan.c codegen/cg_persist.c
RUNTIME_SRCS := runtime/rt_nvrtc.c
RT_SRCS      := runtime/rt_half.c runtime/rt_x3.c runtime/rt_blocks.c runtime/rt_wt.c runtime/rt_fold.c runtime/rt_program.c runtime/rt_model.c runtime/rt_lock.c runtime/rt_calls.c runtime/rt_spans.c runtime/rt_regions.c runtime/rt_forward.c \
                runtime/rt_module.c runtime/rt_build.c runtime/rt_cache.c runtime/rt_verify.c runtime/rt_bind.c runtime/rt_backward.c runtime/rt_gemm.c runtime/rt_persist.c runtime/rt_tile.c
CLI_SRCS     := compiler/main.c compiler/cli_load.c compiler/cli_json.c compiler/cli_fold.c compiler/cli_dump.c compiler/cli_emit.c compiler/cli_run.c
TEST_SRCS    := $(wildcard tests/check_*.c)

LIB_SRCS := $(IR_SRCS) $(GRAMMAR_SRCS) $(CODEGEN_SRCS) $(RUNTIME_SRCS) $(RT_SRCS)
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o) $(GRAMMAR_GEN:.c=.o) $(B)/codegen/prelude_text.o $(B)/codegen/persist_text.o \
            $(B)/codegen/convert_text.o
CLI_OBJS := $(CLI_SRCS:%.c=$(B)/%.o)
TESTS    := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
# the random cells of the GPU fuzz run (tests/gpu/fuzz_configs.py), from tests/testutil.c
RANDOM_CELLS := $(B)/tests/random_cells

all: $(B)/librnncc.a $(B)/librnncc.so $(B)/librnncc.so.$(SOMAJOR) $(B)/rnncc

# Build packages (flex, bison, Check, clang...): installed by .ci/install-deps when missing
# (as root; otherwise it says what to install). Checked once per build directory.
$(B)/.deps-ok: .ci/install-deps
	@mkdir -p $(@D)
	@bash .ci/install-deps
	@touch $@

# ---- grammar: generated sources go to $(B)/grammar ------------------------------
$(B)/grammar/parser.c $(B)/grammar/parser.h &: grammar/parser.y | $(B)/.deps-ok
	@mkdir -p $(@D)
	@echo "  BISON   $<"
	$(Q)$(BISON) -Wall -Werror -o $(B)/grammar/parser.c --header=$(B)/grammar/parser.h $<

$(B)/grammar/lexer.c $(B)/grammar/lexer.h &: grammar/lexer.l $(B)/grammar/parser.h
	@mkdir -p $(@D)
	@echo "  FLEX    $<"
	$(Q)$(FLEX) --header-file=$(B)/grammar/lexer.h -o $(B)/grammar/lexer.c $<

# CUDA text embedded as C strings: the prelude (device helpers, the kernel argument block)
# of every translation unit, the persistent kernels' helpers, and the per-step units' operand
# conversions.
PRELUDE_PARTS := runtime/rnn_args.h codegen/prelude.cuh
define embed
	@mkdir -p $(@D)
	@echo "  EMBED   $^"
	$(Q){ echo '/* Generated from $^ by the Makefile: do not edit. */'; \
	  echo 'const char $(1)[] ='; \
	  cat $^ | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/'; \
	  echo ';'; } > $@
endef
$(B)/codegen/prelude_text.c: $(PRELUDE_PARTS)
	$(call embed,cg_prelude_text)
$(B)/codegen/persist_text.c: codegen/persist.cuh
	$(call embed,cg_persist_text)
$(B)/codegen/convert_text.c: codegen/convert.cuh
	$(call embed,cg_convert_text)

$(B)/codegen/%_text.o: $(B)/codegen/%_text.c
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Everything that includes the generated headers waits for them.
$(LIB_OBJS) $(CLI_OBJS): | $(B)/grammar/parser.h $(B)/grammar/lexer.h

# ---- compile and link -------------------------------------------------------------
$(B)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(B)/grammar/%.o: $(B)/grammar/%.c
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-function -c $< -o $@

$(B)/librnncc.a: $(LIB_OBJS)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/librnncc.so: $(LIB_OBJS) runtime/rnncc.map
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,librnncc.so.$(SOMAJOR) -Wl,--version-script=runtime/rnncc.map $(LDFLAGS) -o $@ \
	    $(LIB_OBJS) $(LDLIBS)

# the soname's link beside it, so that a program linked with -Lbuild -lrnncc finds librnncc.so.0 at run time
$(B)/librnncc.so.$(SOMAJOR): $(B)/librnncc.so
	$(Q)ln -sf librnncc.so $@

$(B)/rnncc: $(CLI_OBJS) $(B)/librnncc.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# ---- tests: one Check suite per module, Check linked statically -------------------
CHECK_LIBS := -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lrt -lpthread

# Check's header comes from install-deps: the test objects wait for it (an explicit list, since a
# recipe-less pattern rule would not add the prerequisite to the $(B)/%.o rule that builds them).
$(TEST_SRCS:%.c=$(B)/%.o) $(B)/tests/testutil.o $(B)/tests/unit_races.o $(RANDOM_CELLS).o: | $(B)/.deps-ok
$(B)/tests/%: $(B)/tests/%.o $(B)/tests/testutil.o $(B)/tests/unit_races.o $(B)/librnncc.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# check_cli runs random_cells too (its arguments' errors)
$(B)/tests/check_cli: | $(RANDOM_CELLS)
test: all $(TESTS) $(RANDOM_CELLS) examples $(B)/parity/parity $(B)/bench/handoff_floor $(B)/bench/gemm_layouts \
      $(B)/bench/bench_rnn $(B)/bench/libkernel_trace.so
	@fail=0; for t in $(TESTS); do \
	    echo "== $$t"; $$t || fail=1; \
	done; \
	echo "== tests/examples.sh"; bash tests/examples.sh $(B) || fail=1; \
	echo "== tests/parity/fake_check.sh (parity without torch: the reference, and the GPU where there is one)"; \
	sh tests/parity/fake_check.sh $(B) || fail=1; \
	echo "== tests/bench_tools.sh"; bash tests/bench_tools.sh $(B) || fail=1; \
	echo "== tests/install.sh"; bash tests/install.sh $(B) "$(CC)" "$(LDFLAGS)" || fail=1; \
	echo "== tests/gpu/fuzz_configs.py --host-check 60"; python3 tests/gpu/fuzz_configs.py --host-check 60 --build $(B) || fail=1; \
	echo "== tests/gpu/fuzz_configs.py --self-test"; python3 tests/gpu/fuzz_configs.py --self-test --build $(B) || fail=1; \
	echo "== tests/gpu/device_checks.sh, dry (DEVICE_CHECKS_DRY=1: each rnncc step's command line reaches the device)"; \
	d=$$(mktemp -d); if DEVICE_CHECKS_DRY=1 OUT=$$d bash tests/gpu/device_checks.sh > $$d/all.log 2>&1; \
	then echo "device_checks dry: $$(grep -c '^ok ' $$d/all.log) steps reach the device, $$(grep -c '^skipped ' $$d/all.log) skipped (not rnncc)"; \
	else sed -n '/^=== summary/,$$p' $$d/all.log | grep -v '^ok \|^skipped '; fail=1; fi; rm -rf $$d; \
	if [ $$fail -ne 0 ]; then echo "make test: FAILED"; exit 1; fi; echo "make test: all suites passed"

demo: all
	$(B)/rnncc check cells/lstm.cell
	$(B)/rnncc dump --ir cells/lstm.cell
	$(B)/rnncc dump --schedule --dim I=256 --dim H=256 cells/lstm.cell
	@if $(B)/rnncc devices > /dev/null 2>&1; then \
	    $(B)/rnncc run cells/lstm.cell --dim I=256 --dim H=256 --batch 32 --seq 50; \
	else echo "demo: no GPU present: skipping 'rnncc run' (it checks the GPU against the reference)"; fi

golden-update: all
	@for f in cells/*.cell; do n=$$(basename $$f .cell); \
	    $(B)/rnncc dump --ir $$f > tests/golden/$$n.ir; \
	    $(B)/rnncc dump --schedule $$f > tests/golden/$$n.plan; done
	@$(B)/rnncc dump --fold --schedule cells/lstmp.cell > tests/golden/lstmp.fold
	@$(B)/rnncc check --json cells/lstm.cell tests/bad/several_errors.cell tests/no_such_file.cell > tests/golden/check.json; true
	@for n in lstm gru; do \
	    $(B)/rnncc emit --dim I=8 --dim H=16 -o tests/golden/$$n.cu cells/$$n.cell; done
	@$(B)/rnncc emit --dim I=8 --dim H=16 --persistent 4 --cluster 1 -o tests/golden/lstm_persist.cu cells/lstm.cell
	@$(B)/rnncc emit --dim I=8 --dim H=16 --persistent 4 --cluster 1 --backward -o tests/golden/lstm_persist_back.cu cells/lstm.cell
	@$(B)/rnncc emit --dim I=8 --dim H=16 --persistent 4 --cluster 1 --precision tf32 -o tests/golden/lstm_persist_tf32.cu cells/lstm.cell
	@$(B)/rnncc emit --dim I=8 --dim H=16 --persistent 4 --cluster 1 --handoff flags -o tests/golden/lstm_persist_flags.cu cells/lstm.cell
	@$(B)/rnncc emit --dim I=8 --dim H=16 --persistent 4 --cluster 2 --precision tf32 -o tests/golden/lstm_persist_tf32_cluster.cu cells/lstm.cell
	@$(B)/rnncc emit --dim I=8 --dim H=16 --persistent 4 --cluster 1 --precision fp16 -o tests/golden/lstm_persist_f16.cu cells/lstm.cell
	@$(B)/rnncc emit --dim I=8 --dim H=16 --persistent 4 --cluster 1 --precision bf16 --backward -o tests/golden/lstm_persist_bf16_back.cu cells/lstm.cell
	@for f in tests/bad/*.cell; do \
	    $(B)/rnncc check $$f > /dev/null 2> $${f%.cell}.err; true; done
	@echo "golden files rewritten: review 'git diff tests/'"

asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp $(MAKE) B=build/asan SAN=1 CC=clang test

# ---- fuzzing: libFuzzer over parse + check (tests/fuzz/fuzz_util.h: what the targets share) ---
FUZZ_SECONDS ?= 60
FUZZ_CC = clang -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined $(CPPFLAGS:-MMD=) -o $@ $(filter %.c,$^) -lm
$(B)/fuzz_parse: tests/fuzz/fuzz_parse.c tests/fuzz/fuzz_util.h $(IR_SRCS) $(GRAMMAR_SRCS) $(GRAMMAR_GEN)
	@echo "  FUZZ    $@"
	$(Q)$(FUZZ_CC)

# ... and over schedule, layout and code generation (per-step and persistent units, no NVRTC)
CG_TEXT := $(B)/codegen/prelude_text.c $(B)/codegen/persist_text.c $(B)/codegen/convert_text.c
$(B)/fuzz_compile: tests/fuzz/fuzz_compile.c tests/fuzz/fuzz_util.h tests/unit_races.c tests/unit_races.h $(IR_SRCS) $(GRAMMAR_SRCS) $(CODEGEN_SRCS) $(GRAMMAR_GEN) $(CG_TEXT)
	@echo "  FUZZ    $@"
	$(Q)$(FUZZ_CC)

# the back half's corpus starts from the shipped cells and forty random ones (tests/random_cells.c), whose
# states and step groups of several lengths let the race checks' cases come up (bench/NOTES.md section 76)
fuzz: $(B)/fuzz_parse $(B)/fuzz_compile $(RANDOM_CELLS)
	@mkdir -p $(B)/fuzz-corpus $(B)/fuzz-corpus-compile
	@cp cells/*.cell $(B)/fuzz-corpus/ && cp cells/*.cell $(B)/fuzz-corpus-compile/
	@$(RANDOM_CELLS) 1 20 $(B)/fuzz-corpus-compile && $(RANDOM_CELLS) --wide 1 20 $(B)/fuzz-corpus-compile
	@# the two targets side by side (each one process: a processor each), each one's log shown whole after both
	@$(B)/fuzz_parse -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
	    -dict=tests/fuzz/cell.dict $(B)/fuzz-corpus tests/bad > $(B)/fuzz_parse.log 2>&1 & p=$$!; \
	$(B)/fuzz_compile -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
	    -dict=tests/fuzz/cell.dict $(B)/fuzz-corpus-compile > $(B)/fuzz_compile.log 2>&1; c=$$?; wait $$p; p=$$?; \
	echo "== fuzz_parse (exit $$p)"; cat $(B)/fuzz_parse.log; echo "== fuzz_compile (exit $$c)"; cat $(B)/fuzz_compile.log; \
	[ $$p -eq 0 ] && [ $$c -eq 0 ]

# ---- install: DESTDIR only prefixes the paths written here, never the text of an installed file -----
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
# a directory under PREFIX is written as ${prefix}/... in rnncc.pc (pkg-config --define-prefix works)
pc_path = $(if $(filter $(PREFIX),$(1)),$${prefix},$(patsubst $(PREFIX)/%,$${prefix}/%,$(1)))
INSTALLED := $(BINDIR)/rnncc $(LIBDIR)/librnncc.a $(LIBDIR)/librnncc.so.$(VERSION) $(LIBDIR)/librnncc.so.$(SOMAJOR) \
             $(LIBDIR)/librnncc.so $(INCLUDEDIR)/rnncc.h $(LIBDIR)/pkgconfig/rnncc.pc $(MANDIR)/man1/rnncc.1 $(MANDIR)/man3/rnncc.3

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man3
	install -m 755 $(B)/rnncc $(DESTDIR)$(BINDIR)/rnncc
	install -m 644 $(B)/librnncc.a $(DESTDIR)$(LIBDIR)/librnncc.a
	install -m 755 $(B)/librnncc.so $(DESTDIR)$(LIBDIR)/librnncc.so.$(VERSION)
	ln -sf librnncc.so.$(VERSION) $(DESTDIR)$(LIBDIR)/librnncc.so.$(SOMAJOR)
	ln -sf librnncc.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/librnncc.so
	install -m 644 runtime/rnncc.h $(DESTDIR)$(INCLUDEDIR)/rnncc.h
	sed -e 's|@VERSION@|$(VERSION)|g' docs/man/rnncc.1 > $(DESTDIR)$(MANDIR)/man1/rnncc.1
	sed -e 's|@VERSION@|$(VERSION)|g' docs/man/rnncc.3 > $(DESTDIR)$(MANDIR)/man3/rnncc.3
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pc_path,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(call pc_path,$(INCLUDEDIR))|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@CUDA_LIBDIR@|$(CUDA_LIBDIR)|g' -e 's|@CUDA_INCDIR@|$(CUDA)/include|' runtime/rnncc.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/rnncc.pc
	chmod 644 $(DESTDIR)$(MANDIR)/man1/rnncc.1 $(DESTDIR)$(MANDIR)/man3/rnncc.3 $(DESTDIR)$(LIBDIR)/pkgconfig/rnncc.pc

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

# ---- examples: host programs that embed the JIT through runtime/rnncc.h only -------
# embed_lstm (forward, checked against C) and train_adding (training on the adding problem);
# every examples/*.c is one program. tests/examples.sh runs them (77, no GPU: skipped).
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLE_OBJS := $(EXAMPLE_SRCS:examples/%.c=$(B)/examples/%.o)
EXAMPLES     := $(EXAMPLE_SRCS:examples/%.c=$(B)/examples/%)

$(EXAMPLE_OBJS): $(B)/examples/%.o: examples/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(EXAMPLES): $(B)/examples/%: $(B)/examples/%.o $(B)/librnncc.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

examples: $(EXAMPLES)

# ---- parity: rnncc against PyTorch's nn.LSTM (proj_size too) / nn.GRU (tests/parity/README.md) -------
.PHONY: parity
PARITY_OBJS := $(patsubst tests/parity/%.c,$(B)/parity/%.o,$(wildcard tests/parity/*.c))
$(B)/parity/%.o: tests/parity/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(B)/parity/parity: $(PARITY_OBJS) $(B)/librnncc.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

parity: $(B)/parity/parity

# ---- bench: rnncc against cuDNN (its C API) and PyTorch (bench/README.md) -------------
# librnncc is linked whole so that the bench's weak references to rnncc_backward_data and
# rnncc_backward_weights find them wherever in the library they are defined (a weak
# reference alone pulls no archive member in); absent ones make training rows "n/a".
BENCH_PROGS := $(B)/bench/bench_rnn $(B)/bench/custom_cells $(B)/bench/reserve_sizes $(B)/bench/persist_profile \
               $(B)/bench/capture_probe $(B)/bench/host_cost $(B)/bench/handoff_floor $(B)/bench/gemm_layouts
BENCH_LIBS_reserve_sizes := -lcudnn
BENCH_LIBS_bench_rnn := -lcudnn

# beside each program, PROGRAM.built-from: the commit of the tree it was linked in (bench/run.sh reports it: the
# device's copy of the tree may carry older git metadata than the binaries it runs; bench/NOTES.md section 111)
$(BENCH_PROGS): $(B)/bench/%: $(B)/bench/%.o $(B)/bench/common.o $(B)/librnncc.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $(B)/bench/$*.o $(B)/bench/common.o \
	    -Wl,--whole-archive $(B)/librnncc.a -Wl,--no-whole-archive $(LDLIBS) $(BENCH_LIBS_$*)
	$(Q)if r=$$(git rev-parse HEAD 2>/dev/null); then git diff --quiet HEAD || r="$$r (with uncommitted changes)"; \
	    else r="unknown (no git where it was built)"; fi; echo "$$r" > $@.built-from

# the CUPTI tracer (bench/kernel_trace.c), loaded into any program by CUDA_INJECTION64_PATH; its rpath
# $ORIGIN finds a libcupti carried beside it where the device has none (bench/README.md)
$(B)/bench/libkernel_trace.so: $(B)/bench/kernel_trace.o
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -shared -o $@ $< -L$(CUDA_LIBDIR) -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,$(CUDA_LIBDIR) -lcupti -lpthread

bench: $(BENCH_PROGS) $(B)/bench/libkernel_trace.so

clean:
	rm -rf build

-include $(wildcard $(B)/*/*.d $(B)/*/*/*.d)
