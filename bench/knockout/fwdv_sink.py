# bench/knockout/fwdv_sink.py: a persistent backward unit (the deepbench LSTM's: its first item's forward values
# prefetched into q1_ registers) with fwdv_t.sed's values in the element-wise phase (its math kept, fed by no
# load) and the prefetched loads kept, their sum stored at the phase's end under a condition never true: the
# loads and their registers stay, the math no longer waits for them. Beside fwdv_t and none it says whether the
# loads cost by their traffic and registers or by the math's wait (bench/NOTES.md section 111). Results wrong by
# design. Usage (host): python3 bench/knockout/fwdv_sink.py UNIT.cu OUT.cu, UNIT.cu from `rnncc emit ...
# --persistent N --backward` as the runtime builds it; then on the device, bench/knockout/run.sh ... OUT.cu.
import re
import subprocess
import sys

src = subprocess.run(['sed', '-f', 'bench/knockout/fwdv_t.sed', sys.argv[1]], capture_output=True, text=True,
                     check=True).stdout
issued = [l for l in src.split('\n') if 'RNN_ISSUED("f"(q1_' in l]
assert issued, 'no prefetch of first-item values (RNN_ISSUED of q1_ registers) in the unit'
names = re.findall(r'"f"\((q1_[a-z0-9_]+)\)', issued[0])
lines = src.split('\n')
k = next(i for i, l in enumerate(lines) if 'RNN_PROF(4);' in l)
indent = lines[k][:len(lines[k]) - len(lines[k].lstrip())]
lines.insert(k, indent + 'if (args.t == -7) args.state_final[0][threadIdx.x] = ' + ' + '.join(names) +
             ';  // knockout fwdv_sink')
open(sys.argv[2], 'w').write('\n'.join(lines))
