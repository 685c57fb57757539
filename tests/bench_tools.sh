#!/usr/bin/env bash
# The development tools' host paths (no GPU): bench/tools/kernel_times.py on a small ncu CSV (ns, us and ms
# units; the summary; one pass from --from NAME --back K; an unknown name refused with its message),
# bench/ncu_pass.sh without its arguments (its usage, exit 2), and BUILD/bench/handoff_floor's kernels compiled
# for sm_90 (--compile-only: NVRTC, no warning; polls in rounds, with --serial-polls, with --overlap --work, and with
# --groups 2) and its bad arguments refused; bench/knockout/groups2.py and sentinel.py still applying to the flashrnn LSTM fp16 forward unit (sentinel.py to groups2.py's too), fwdv_sink.py, noload.sed, contig.sed and strided.sed to the deepbench LSTM fp16 backward unit; BUILD/bench/gemm_layouts's bad shape refused and its exit 77 without a device; BUILD/bench/bench_rnn's bad --steps and fractional --repeat, --warmup and --seed refused and a good one's exit 77 without a device; bench/jit_fresh.sh's four rounds with stand-ins for bench_rnn (its JIT lines; the cache
# variables each round sets; a bench_rnn without JIT lines says why) and a BENCH_RNN that is not there refused;
# bench/run.sh's JIT lines with the CUDA cache off, in its summary (a stand-in bench_rnn in a copy of the tree), and its
# warning where bench_rnn was linked before build/librnncc.a, and the commit it was built from (BUILD/bench's
# .built-from files, which make writes); bench/knockout/run.sh's rounds and its one tar, with a stand-in rnncc.
# bench/fixed_cost.sh through a stand-in bench_rnn (slopes and intercepts; a run with no table, one that disagreed,
# none with a device; bad lengths) and
# bench/tools/fixed_cost.py's rows at one length only or not timed; bench/tools/trace_gaps.py on a small trace (order, idle
# time, overlaps, totals, --from/--back/--count/--width, --host, bad input), bench/tools/trace_passes.py on a small
# trace with host calls (each timed pass's lead, span, busy, idle and issue; --with, --width; bad input) and
# BUILD/bench/libkernel_trace.so's entry point.
# Prints "ok" or what failed; exit 0 or 1.
# Usage (repository root): bash tests/bench_tools.sh [BUILD]      (default BUILD: build)
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-build}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
expect() { # expect WHAT GOT WANT: records a failure where GOT lacks WANT
    if ! grep -qF -- "$3" <<< "$2"; then echo "bench_tools: $1: lacks '$3' in:"; echo "$2"; fail=1; fi
}
refused() { # refused WHAT WANT COMMAND...: records a failure where COMMAND exits 0 or does not say WANT
    local what=$1 want=$2 out rc
    shift 2
    out=$("$@" 2>&1); rc=$?
    [ $rc -ne 0 ] || { echo "bench_tools: $what: exited 0"; fail=1; }
    expect "$what" "$out" "$want"
}
cat > "$d/k.csv" <<'CSV'
==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","rnncc","h","gemm_a(int)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","2,500"
"1","1","rnncc","h","step_b","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","10.5"
"2","1","rnncc","h","gemm_a(int)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","3.5"
"3","1","rnncc","h","step_b","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.02"
"4","1","rnncc","h","tail_c","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","1.0"
CSV
out=$(python3 bench/tools/kernel_times.py "$d/k.csv" 2>&1)
expect "summary: step_b twice, 10.5 us and 0.02 ms" "$out" "step_b                                                              2       30.5     15.25"
expect "summary: 2,500 ns read as 2.5 us" "$out" "gemm_a                                                              2        6.0      3.00"
expect "summary: every kernel" "$out" "all kernels                                                         5       37.5"
out=$(python3 bench/tools/kernel_times.py "$d/k.csv" --from step_b --back 1 2>&1)
expect "--from step_b --back 1: from the launch before the last step_b" "$out" "      3.5  gemm_a"
expect "--from: the pass summed" "$out" "     24.5  all 3 kernels"
refused "--from an unknown name" "kernel_times.py: no kernel named nothing in $d/k.csv" python3 bench/tools/kernel_times.py "$d/k.csv" --from nothing
cat > "$d/t.tr" <<'TR'
K 9000 9500 7 1 tail_c
K 1000 3000 7 0 gemm_a
K 3500 9000 7 1 step_b
C 4000 5000 8 0 memcpy:64
K 12000 13000 7 1 gemm_a
K 14000 14500 7 1 step_b
A 500 900 42 11 cudaGraphLaunch_v10000
D 3200 3300 42 12 cuLaunchKernel
TR
out=$(python3 bench/tools/trace_gaps.py "$d/t.tr" 2>&1)
! grep -qE 'cudaGraphLaunch|cuLaunchKernel' <<< "$out" || { echo "bench_tools: trace_gaps.py printed host calls without --host: $out"; fail=1; }
expect "trace_gaps.py: sorted by start, the idle time before each" "$out" "     2.50      5.50     0.50      7     1  K step_b"
expect "trace_gaps.py: an overlap as negative idle time" "$out" "     3.00      1.00    -5.00      8     0  C memcpy:64"
expect "trace_gaps.py: the totals" "$out" "activities 6, span 13.50 us, busy 9.50 us, idle 4.00 us, sum of durations 10.50 us"
out=$(python3 bench/tools/trace_gaps.py "$d/t.tr" --host 1 2>&1)
expect "trace_gaps.py --host 1: a call before the window, its thread and correlation id" "$out" "    -0.50      0.40              42    11  A cudaGraphLaunch_v10000"
expect "trace_gaps.py --host: calls in start order among the activities" "$(grep -oE '(gemm_a|cuLaunchKernel|step_b)$' <<< "$out" | head -3 | tr '\n' ' ')" "gemm_a cuLaunchKernel step_b"
expect "trace_gaps.py --host: not in the totals" "$out" "activities 6, span 13.50 us, busy 9.50 us, idle 4.00 us, sum of durations 10.50 us"
printf 'K 1000 5000 7 0 first\nK 2000 9000 7 0 last\nA 3000 3100 1 5 cudaEventRecord_v3020\nA 3200 9500 1 6 cudaEventSynchronize_v3020\n' > "$d/late.tr"
out=$(python3 bench/tools/trace_gaps.py "$d/late.tr" --host 0 2>&1)
expect "trace_gaps.py --host: calls after the last activity's start, while it runs" "$out" "A cudaEventSynchronize_v3020"
expect "trace_gaps.py --host: calls after the last activity's start, in order" "$(tail -3 <<< "$out" | head -1)" "A cudaEventRecord_v3020"
grep '^[KCS] ' "$d/t.tr" > "$d/gpu_only.tr"
refused "trace_gaps.py --host: a trace without host calls" "has no host calls (trace with RNNCC_TRACE_HOST=1)" python3 bench/tools/trace_gaps.py "$d/gpu_only.tr" --host 5
out=$(python3 bench/tools/trace_gaps.py "$d/t.tr" --host 0 2>&1)
! grep -q cudaGraphLaunch <<< "$out" || { echo "bench_tools: trace_gaps.py --host 0 printed a call before the window: $out"; fail=1; }
expect "trace_gaps.py --host 0: the calls inside the window" "$out" "D cuLaunchKernel"
out=$(python3 bench/tools/trace_gaps.py "$d/t.tr" --from step_b --back 1 2>&1)
expect "trace_gaps.py --from step_b --back 1: one pass" "$out" "activities 2, span 2.50 us, busy 1.50 us, idle 1.00 us, sum of durations 1.50 us"
out=$(python3 bench/tools/trace_gaps.py "$d/t.tr" --count 2 --width 3 2>&1)
expect "trace_gaps.py --count 2 --width 3" "$out" "activities 2, span 8.00 us, busy 7.50 us, idle 0.50 us"
expect "trace_gaps.py --width 3: names cut" "$out" "K ste"
! grep -q step_b <<< "$out" || { echo "bench_tools: trace_gaps.py --width 3 printed a name whole: $out"; fail=1; }
refused "trace_gaps.py: --back without --from refused" "trace_gaps.py: --back counts back from --from's activity" python3 bench/tools/trace_gaps.py "$d/t.tr" --back 1
refused "trace_gaps.py: an unknown name" "trace_gaps.py: no activity named like 'nothing'" python3 bench/tools/trace_gaps.py "$d/t.tr" --from nothing
refused "trace_gaps.py: --count 0 refused" "trace_gaps.py: --count: out of range: 0" python3 bench/tools/trace_gaps.py "$d/t.tr" --count 0
printf 'K 1 x 7 0 a\n' > "$d/bad.tr"
refused "trace_gaps.py: a bad line named" "bad.tr:1: not a trace line" python3 bench/tools/trace_gaps.py "$d/bad.tr"
cat > "$d/p.tr" <<'TR'
K 50 60 7 0 before
A 100 110 1 1 cudaStreamSynchronize_v3020
A 200 210 1 2 cudaEventRecord_v3020
A 220 300 1 3 cudaGraphLaunch_v10000
K 400 600 7 1 rnncc_a
K 650 800 7 1 rnncc_b
A 310 320 1 4 cudaEventRecord_v3020
A 330 900 1 5 cudaEventSynchronize_v3020
A 905 910 1 6 cudaEventElapsedTime_v12080
A 1000 1010 1 7 cudaEventRecord_v3020
A 1020 1030 1 8 cudaEventRecord_v3020
D 1041 1050 1 9 cuLaunchKernel
A 1040 1100 1 9 cudaLaunchKernel_v7000
A 1110 1120 1 10 cudaEventRecord_v3020
K 1200 1500 7 0 RNN_x
A 1130 1600 1 11 cudaEventSynchronize_v3020
A 1605 1610 1 12 cudaEventElapsedTime_v12080
TR
out=$(python3 bench/tools/trace_passes.py "$d/p.tr" 2>&1)
expect "trace_passes.py: a pass's lead, span, busy, idle and issue" "$out" "   0      0.19      0.40      0.35      0.05      0.11     2  rnncc_a"
expect "trace_passes.py: a pass's first event after the last one's elapsed time, not an inner record" "$out" "   1      0.19      0.30      0.30      0.00      0.11     1  RNN_x"
expect "trace_passes.py: the medians" "$out" "passes 2, medians: lead 0.19 us, span 0.35 us"
! grep -q before <<< "$out" || { echo "bench_tools: trace_passes.py counted an activity before any pass: $out"; fail=1; }
out=$(python3 bench/tools/trace_passes.py "$d/p.tr" --with rnncc --width 5 2>&1)
expect "trace_passes.py --with rnncc --width 5: one side's passes" "$out" "passes 1, medians: lead 0.19 us, span 0.40 us"
expect "trace_passes.py --width 5" "$out" "     2  rnncc"
refused "trace_passes.py: no pass with the name" "no timed pass with an activity named like 'nothing'" python3 bench/tools/trace_passes.py "$d/p.tr" --with nothing
refused "trace_passes.py: a trace without host calls" "no host calls (trace with RNNCC_TRACE_HOST=1)" python3 bench/tools/trace_passes.py "$d/gpu_only.tr"
refused "trace_passes.py: --width 0 refused" "trace_passes.py: --width: not a positive whole number: 0" python3 bench/tools/trace_passes.py "$d/p.tr" --width 0
expect "libkernel_trace.so: the driver's entry point" "$(nm -D --defined-only "$B/bench/libkernel_trace.so" 2>&1)" "T InitializeInjection"
out=$(bash bench/ncu_pass.sh 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "bench_tools: ncu_pass.sh without arguments exited $rc, not 2"; fail=1; }
expect "ncu_pass.sh without arguments: its usage" "$out" "bash bench/ncu_pass.sh FROM K CSV ARGS..."
out=$("$B/bench/handoff_floor" --compile-only sm_90 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: handoff_floor --compile-only sm_90 exited $rc"; fail=1; }
expect "handoff_floor --compile-only: every kernel of the default grid" "$out" "handoff_floor: 64 kernels compiled for sm_90"
out=$("$B/bench/handoff_floor" --compile-only sm_90 --serial-polls 48,8,16,768 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: handoff_floor --compile-only sm_90 --serial-polls exited $rc"; fail=1; }
expect "handoff_floor --serial-polls: one shape's kernels" "$out" "handoff_floor: 8 kernels compiled for sm_90"
out=$("$B/bench/handoff_floor" --compile-only sm_90 --overlap --work 64 48,8,16,768 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: handoff_floor --compile-only sm_90 --overlap --work 64 exited $rc"; fail=1; }
expect "handoff_floor --overlap --work: one shape's kernels" "$out" "handoff_floor: 8 kernels compiled for sm_90"
out=$("$B/bench/handoff_floor" --compile-only sm_90 --groups 2 --work 64 48,8,16,768 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: handoff_floor --compile-only sm_90 --groups 2 --work 64 exited $rc"; fail=1; }
expect "handoff_floor --groups 2: one shape's kernels" "$out" "handoff_floor: 8 kernels compiled for sm_90"
out=$("$B/bench/handoff_floor" --groups 3 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: handoff_floor --groups 3 exited $rc, not 1"; fail=1; }
expect "handoff_floor: a bad --groups" "$out" "handoff_floor: error: --groups takes 1, 2 or 4"
out=$("$B/bench/handoff_floor" --groups 4 48,8,6,768 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: handoff_floor --groups 4 with 6 sequences exited $rc, not 1"; fail=1; }
expect "handoff_floor: sequences not a multiple of --groups" "$out" "N 1-64 and a multiple of --groups"
out=$("$B/bench/handoff_floor" --serial-polls --overlap 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: handoff_floor --serial-polls --overlap exited $rc, not 1"; fail=1; }
expect "handoff_floor: --overlap refused with --serial-polls" "$out" "handoff_floor: error: --overlap adds up between rounds of polls"
out=$("$B/bench/handoff_floor" --work 5000 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: handoff_floor --work 5000 exited $rc, not 1"; fail=1; }
expect "handoff_floor: a bad --work" "$out" "handoff_floor: error: --work takes C, FMAs a load, 0-4096"
out=$("$B/bench/handoff_floor" 120,8,16,100 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: handoff_floor with a bad shape exited $rc, not 1"; fail=1; }
expect "handoff_floor: a bad shape" "$out" "handoff_floor: error: '120,8,16,100': a shape is G,W,N,H"
out=$("$B/bench/handoff_floor" --steps 9,3 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: handoff_floor --steps 9,3 exited $rc, not 1"; fail=1; }
expect "handoff_floor: bad steps" "$out" "handoff_floor: error: --steps takes T1,T2 with 1 <= T1 < T2 <= 100000"
out=$("$B/bench/gemm_layouts" 4096,256 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: gemm_layouts with a bad shape exited $rc, not 1"; fail=1; }
expect "gemm_layouts: a bad shape" "$out" "gemm_layouts: error: a shape is M,N,K (each 1 to 65536, at most 16 shapes), got '4096,256'"
out=$(CUDA_VISIBLE_DEVICES= "$B/bench/gemm_layouts" 64,8,32 2>&1); rc=$?
[ $rc -eq 77 ] || { echo "bench_tools: gemm_layouts without a device exited $rc, not 77"; fail=1; }
expect "gemm_layouts: no device" "$out" "gemm_layouts: no CUDA device"
out=$("$B/bench/bench_rnn" --steps 0 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "bench_tools: bench_rnn --steps 0 exited $rc, not 2"; fail=1; }
expect "bench_rnn: a bad --steps" "$out" "bench_rnn: error: --steps must be a number in 1..100000, not '0'"
out=$("$B/bench/bench_rnn" --steps 2.5 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "bench_tools: bench_rnn --steps 2.5 exited $rc, not 2"; fail=1; }
expect "bench_rnn: --steps not whole" "$out" "bench_rnn: error: --steps must be a whole number, not '2.5'"
for o in repeat warmup seed; do # counts refuse fractions too (they were truncated)
    out=$("$B/bench/bench_rnn" --$o 2.5 2>&1); rc=$?
    [ $rc -eq 2 ] || { echo "bench_tools: bench_rnn --$o 2.5 exited $rc, not 2"; fail=1; }
    expect "bench_rnn: --$o not whole" "$out" "bench_rnn: error: --$o must be a whole number, not '2.5'"
done
out=$(CUDA_VISIBLE_DEVICES= "$B/bench/bench_rnn" --steps 100 --config deepbench 2>&1); rc=$?
[ $rc -eq 77 ] || { echo "bench_tools: bench_rnn --steps 100 without a device exited $rc, not 77"; fail=1; }
"$B/rnncc" emit cells/lstm.cell --dim I=768 --dim H=768 --persistent 16 --precision fp16 --handoff direct --blocks 96 \
    --forward -o "$d/fl.cu" && out=$(python3 bench/knockout/groups2.py "$d/fl.cu" "$d/g2.cu" 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: bench/knockout/groups2.py no longer applies to the emitted unit: $out"; fail=1; }
expect "groups2.py: two groups' counters" "$(cat "$d/g2.cu" 2>/dev/null)" "rnn_grid_arrive(rnn_g ? rnn_sync1 : args.sync);"
for u in fl g2; do # sentinel.py on the rule's unit and on groups2.py's
    out=$(python3 bench/knockout/sentinel.py "$d/$u.cu" "$d/s-$u.cu" 2>&1); rc=$?
    [ $rc -eq 0 ] || { echo "bench_tools: bench/knockout/sentinel.py no longer applies to $u.cu: $out"; fail=1; }
    expect "sentinel.py on $u.cu: the operand polled" "$(cat "$d/s-$u.cu" 2>/dev/null)" "if (rnn_sl_is(xg)) rnn_load_b_poll<KP, NT, KS>"
done
# fwdv_sink.py (with fwdv_t.sed) on the deepbench LSTM fp16 backward unit: the values fed by no load, the prefetch's loads kept
out=$("$B/rnncc" emit cells/lstm.cell --dim I=1024 --dim H=1024 --persistent 32 --precision fp16 --backward -o "$d/db.cu" 2>&1) &&
    out=$(python3 bench/knockout/fwdv_sink.py "$d/db.cu" "$d/sk.cu" 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: bench/knockout/fwdv_sink.py no longer applies to the deepbench backward unit: $out"; fail=1; }
expect "fwdv_sink.py: the loads kept" "$(cat "$d/sk.cu" 2>/dev/null)" "if (args.t == -7) args.state_final[0][threadIdx.x] = q1_v15 + q1_v16 + "
expect "fwdv_sink.py: fwdv_t's values" "$(cat "$d/sk.cu" 2>/dev/null)" "const float v15 = 0.25f + 0.001f * (float)(threadIdx.x + a.t) + 0.0001f * 15.0f;"
# noload.sed and contig.sed (section 118) and strided.sed (section 119) on the same unit: each takes out the transposed
# load of its weights
for s in noload contig strided; do
    sed -f bench/knockout/$s.sed "$d/db.cu" > "$d/ko-$s.cu"
    n=$(grep -c "($s.sed" "$d/ko-$s.cu") left=$(grep -c '^ *rnn_load_transposed<0>(w' "$d/ko-$s.cu")
    [ "$n" = 1 ] && [ "$left" = 0 ] ||
        { echo "bench_tools: bench/knockout/$s.sed on the deepbench backward unit: $n lines changed, $left loads left"; fail=1; }
done
# fixed_cost.sh through a stand-in bench_rnn that writes a markdown row a run (best cuDNN's ms = 0.046 + T * 0.0112,
# rnncc's 0.096 + T * 0.0108; the PS column another number, so that a reader of the wrong column fails), or at T =
# STEPS_NOMD none, at T = STEPS_DISAGREE its row and exit 1, at T = STEPS_NODEV exit 77
cat > "$d/steps_rnn" <<'SH'
#!/bin/sh
t="" md=""
while [ $# -gt 0 ]; do case $1 in --steps) t=$2; shift ;; --markdown) md=$2; shift ;; esac; shift; done
[ "${STEPS_NODEV:-}" != "$t" ] || { echo "stand-in: no CUDA device"; exit 77; }
[ "${STEPS_NOMD:-}" != "$t" ] || { echo "stand-in: no table at T = $t"; exit 0; }
cu=$(awk -v t="$t" 'BEGIN { printf "%.3f", 0.046 + t * 0.0112 }') rn=$(awk -v t="$t" 'BEGIN { printf "%.3f", 0.096 + t * 0.0108 }')
printf '| config | cell |\n|---|---|\n| deepbench@%s (%s, 32, 1024, 1, 1) | lstm | fp16 | training | skip | 9.999 | skip | skip | %s PS | %s | 1.1 |\n' "$t" "$t" "$cu" "$rn" > "$md"
[ "${STEPS_DISAGREE:-}" != "$t" ] || { echo "*** MISMATCH ***"; exit 1; }
SH
chmod +x "$d/steps_rnn"
out=$(BENCH_RNN="$d/steps_rnn" OUT="$d/fc" bash bench/fixed_cost.sh 25 100 --config deepbench 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: fixed_cost.sh exited $rc: $out"; fail=1; }
expect "fixed_cost.sh: each run's row" "$out" "| deepbench@100 (100, 32, 1024, 1, 1) | lstm | fp16 | training |"
expect "fixed_cost.sh: slopes and intercepts" "$out" "deepbench    lstm fp16 training     11.20     46.0         10.80     96.0      +50.0 us"
out=$(STEPS_NOMD=100 BENCH_RNN="$d/steps_rnn" OUT="$d/fc" bash bench/fixed_cost.sh 25 100 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: fixed_cost.sh with a run that wrote no table (a stale one beside it) exited $rc, not 1"; fail=1; }
expect "fixed_cost.sh: a run with no table" "$out" "fixed_cost.sh: bench_rnn at T = 100 (exit 0) wrote no table"
out=$(STEPS_DISAGREE=25 BENCH_RNN="$d/steps_rnn" OUT="$d/fc" bash bench/fixed_cost.sh 25 100 2>&1); rc=$?
[ $rc -eq 1 ] || { echo "bench_tools: fixed_cost.sh with a run that disagreed exited $rc, not 1"; fail=1; }
expect "fixed_cost.sh: a run that disagreed" "$out" "fixed_cost.sh: bench_rnn at T = 25 exited 1"
expect "fixed_cost.sh: its rows read still" "$out" "deepbench    lstm fp16 training     11.20     46.0"
out=$(STEPS_NODEV=25 BENCH_RNN="$d/steps_rnn" OUT="$d/fc77" bash bench/fixed_cost.sh 25 100 2>&1); rc=$?
[ $rc -eq 77 ] || { echo "bench_tools: fixed_cost.sh without a device exited $rc, not 77"; fail=1; }
for bad in "25 25" "25 025" "0 25" "25 2x" "25"; do
    out=$(BENCH_RNN="$d/steps_rnn" bash bench/fixed_cost.sh $bad 2>&1); rc=$?
    [ $rc -eq 2 ] || { echo "bench_tools: fixed_cost.sh $bad exited $rc, not 2"; fail=1; }
done
expect "fixed_cost.sh: its usage" "$out" "bash bench/fixed_cost.sh T1 T2 [BENCH_RNN ARGS...]"
out=$(BENCH_RNN="$d/steps_rnn" bash bench/fixed_cost.sh 25 0 2>&1)
expect "fixed_cost.sh: a step count out of range" "$out" "fixed_cost.sh: a step count is 1 to 100000, not '0'"
out=$(BENCH_RNN="$d/steps_rnn" bash bench/fixed_cost.sh 025 25 2>&1)
expect "fixed_cost.sh: equal lengths written apart" "$out" "fixed_cost.sh: T1 and T2 must differ"
grep -v '^| deepbench' "$d/fc/steps-25.md" > "$d/one.md"
printf '| deepbench@100 (100, 32, 1024, 1, 1) | gru | fp16 | training | skip | n/a | skip | skip | n/a | FAIL | n/a |\n' >> "$d/one.md"
printf '| deepbench@25 (25, 32, 1024, 1, 1) | gru | fp16 | training | skip | 0.5 | skip | skip | 0.5 PD | 0.4 | 0.8 |\n' >> "$d/fc/steps-25.md"
out=$(python3 bench/tools/fixed_cost.py "$d/fc/steps-25.md" "$d/one.md" 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: fixed_cost.py exited $rc: $out"; fail=1; }
expect "fixed_cost.py: a row at one length only" "$out" "deepbench lstm fp16 training: at one length only"
expect "fixed_cost.py: a row not timed" "$out" "deepbench    gru  fp16 training       not timed              not timed         n/a"
out=$(bash bench/jit_fresh.sh "$d/none" 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "bench_tools: jit_fresh.sh with no such bench_rnn exited $rc, not 2"; fail=1; }
expect "jit_fresh.sh: a BENCH_RNN that is not there" "$out" "jit_fresh.sh: $d/none is not an executable"
cat > "$d/bench_rnn" <<'SH'
#!/bin/sh
echo "bench_rnn: a stand-in"
jit="JIT lstm (quick shape, fp32; H+8, H+16: sources new to NVRTC): cache ${CUDA_CACHE_PATH:+a folder} off=${CUDA_CACHE_DISABLE:-0}"
echo "$jit"
echo "== bench_rnn results" # as bench_rnn does, its JIT lines again after its table
echo "$jit"
SH
chmod +x "$d/bench_rnn"
printf '#!/bin/sh\necho "bench_rnn: no CUDA device: nothing to measure"\nexit 77\n' > "$d/bench_none"
chmod +x "$d/bench_none"
out=$(bash bench/jit_fresh.sh "$d/bench_rnn" "$d/bench_none" 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: jit_fresh.sh exited $rc"; fail=1; }
expect "jit_fresh.sh: the first round" "$out" "] first: $d/bench_rnn"
expect "jit_fresh.sh: a JIT line, shortened" "$out" "JIT lstm (quick shape, fp32; H+8, H+16): cache  off=0"
expect "jit_fresh.sh: the empty cache's round" "$out" "JIT lstm (quick shape, fp32; H+8, H+16): cache a folder off=0"
expect "jit_fresh.sh: each run's folder" "$out" "its CUDA cache folder after the run: "
expect "jit_fresh.sh: the cache off" "$out" "JIT lstm (quick shape, fp32; H+8, H+16): cache  off=1"
expect "jit_fresh.sh: a bench_rnn without JIT lines says why" "$out" "bench_rnn: no CUDA device: nothing to measure"
# run.sh's JIT lines with the CUDA cache off, in the summary, from a stand-in bench_rnn in a copy of the tree
mkdir -p "$d/tree/bench" "$d/tree/build/bench"
cp bench/run.sh "$d/tree/bench/"
cp "$d/bench_rnn" "$d/tree/build/bench/bench_rnn"
out=$(OUT="$d/out" bash "$d/tree/bench/run.sh" --only rnn 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: run.sh --only rnn on a stand-in exited $rc"; echo "$out"; fail=1; }
expect "run.sh: the uncached JIT part" "$out" "===== jit_uncached: env CUDA_CACHE_DISABLE=1 build/bench/bench_rnn --config quick"
expect "run.sh: its JIT line in the summary" "$(cat "$d/out/summary.txt" 2>&1)" \
    "JIT, the CUDA cache off: lstm (quick shape, fp32; H+8, H+16: sources new to NVRTC): cache  off=1"
n=$(grep -c '^JIT, the CUDA cache off: ' "$d/out/summary.txt" 2>/dev/null)
[ "$n" = 1 ] || { echo "bench_tools: run.sh's summary has $n JIT lines with the CUDA cache off, not 1 (bench_rnn prints each twice)"; fail=1; }
[ -z "$(grep 'WARNING: linked before' "$d/out/summary.txt")" ] || { echo "bench_tools: run.sh warns of a stale bench_rnn with no library"; fail=1; }
expect "run.sh: no built-from file" "$(cat "$d/out/summary.txt" 2>&1)" "built from: unknown (no build/bench/*.built-from"
# the commit bench_rnn was linked from (make bench's bench_rnn.built-from), in the summary and results.md
echo "0123abc (with uncommitted changes)" > "$d/tree/build/bench/bench_rnn.built-from"
OUT="$d/out3" bash "$d/tree/bench/run.sh" --only rnn > /dev/null 2>&1
expect "run.sh: built from, in the summary" "$(cat "$d/out3/summary.txt" 2>&1)" "built from: bench_rnn 0123abc (with uncommitted changes)"
expect "run.sh: built from, in results.md" "$(cat "$d/out3/results.md" 2>&1)" ", built from bench_rnn 0123abc (with uncommitted changes): see"
# make's: the benchmark programs the test target links (handoff_floor) carry the commit they were linked in (a
# build older than HEAD keeps its own: only the form is checked; a program linked before the Makefile last changed
# may predate the files, and is let off where it has none)
bf="$B/bench/handoff_floor.built-from"
if [ ! -e "$bf" ] && [ Makefile -nt "$B/bench/handoff_floor" ]; then
    echo "bench_tools: $bf absent: $B/bench/handoff_floor was linked before the Makefile changed (make bench writes it)"
elif git rev-parse HEAD > /dev/null 2>&1; then
    grep -qE '^[0-9a-f]{40}( \(with uncommitted changes\))?$' "$B/bench/handoff_floor.built-from" 2> /dev/null ||
        { echo "bench_tools: $B/bench/handoff_floor.built-from is not a commit: $(cat "$B/bench/handoff_floor.built-from" 2>&1)"; fail=1; }
fi
# a library built after bench_rnn: the summary and results.md say so
touch -d '1 minute ago' "$d/tree/build/bench/bench_rnn" && : > "$d/tree/build/librnncc.a"
OUT="$d/out2" bash "$d/tree/bench/run.sh" --only rnn > /dev/null 2>&1
expect "run.sh: a stale bench_rnn in the summary" "$(cat "$d/out2/summary.txt" 2>&1)" "WARNING: linked before build/librnncc.a: bench_rnn; their rnncc figures are an older library's"
expect "run.sh: a stale bench_rnn in results.md" "$(cat "$d/out2/results.md" 2>&1)" "WARNING: linked before build/librnncc.a: bench_rnn;"
# bench/knockout/run.sh with a stand-in build/knockout/rnncc (ms by --seq; a unit dumped where asked): the rounds' µs
# a step, and the units and logs in one file of $OUT (the device tool returns 8 files at most)
mkdir -p "$d/ko/bench/knockout" "$d/ko/build/knockout"
cp bench/knockout/run.sh bench/knockout/ew.sed "$d/ko/bench/knockout/"
cat > "$d/ko/build/knockout/rnncc" <<'SH'
#!/bin/sh
[ -n "$RNNCC_KNOCKOUT" ] && [ -n "$RNNCC_KNOCKOUT_DUMP" ] && echo "// unit after $RNNCC_KNOCKOUT" > "$RNNCC_KNOCKOUT_DUMP"
case " $* " in *" --seq 256 "*) echo "0.500 ms per sequence" ;; *) echo "0.200 ms per sequence" ;; esac
SH
chmod +x "$d/ko/build/knockout/rnncc"
out=$(OUT="$d/ko-out" KNOCKOUT_FILES="$d/ko-files" KNOCKOUT_CACHES="$d/ko-cache-" bash "$d/ko/bench/knockout/run.sh" 2 "cells/lstm.cell --batch 4" none ew 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "bench_tools: knockout/run.sh on a stand-in exited $rc: $out"; fail=1; }
expect "knockout/run.sh: a round" "$out" "round 2: none=1.56 ew=1.56"
[ "$(ls "$d/ko-out")" = knockout-files.tar ] || { echo "bench_tools: knockout/run.sh left $(ls "$d/ko-out" | tr '\n' ' ')in \$OUT, not one tar"; fail=1; }
expect "knockout/run.sh: its files" "$(tar -tf "$d/ko-out/knockout-files.tar" 2>&1 | sort | tr '\n' ' ')" "./unit-ew.cu ./warm-ew.log ./warm-none.log"
[ $fail -eq 0 ] && echo "bench_tools: ok"
exit $fail
