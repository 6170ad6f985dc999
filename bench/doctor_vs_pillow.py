#!/usr/bin/python3
"""doctor data vs a Pillow load loop on the same image files, same machine, same run.

usage: /usr/bin/python3 bench/doctor_vs_pillow.py [EDGEDECODE_BINARY] [IMAGES_DIR] [--reps N] [--scale K]
--scale K copies the set K times into a temporary directory first (a dataset-sized run, where
process start no longer dominates and both cores have work).
Pillow: Image.open + load() on every file (the loop a dataset loader runs), errors caught, timed two
ways: inside this process (the loop alone, no interpreter start or import) and as its own process
(`python3 -c` with the same loop: interpreter start + PIL import + loop, which is what a user runs as a
check script). doctor: `edgedecode doctor data DIR --jobs J` as a process (start, walk, sniff, full
entropy decode and classification of every file, the report). Both sides alternate; medians of N
repetitions; the ratio is Pillow time / doctor time.
"""
import os, statistics, subprocess, sys, time, warnings

LOOP = """
import os, sys, warnings
from PIL import Image
warnings.simplefilter("ignore")
ok = bad = 0
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        try:
            with Image.open(os.path.join(d, f)) as im:
                im.load()
            ok += 1
        except Exception:
            bad += 1
"""

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps, scale = 5, 1
    if "--reps" in sys.argv:
        reps = int(sys.argv[sys.argv.index("--reps") + 1]); args = [a for a in args if a != str(reps)]
    if "--scale" in sys.argv:
        scale = int(sys.argv[sys.argv.index("--scale") + 1]); args = [a for a in args if a != str(scale)]
    here = os.path.dirname(os.path.abspath(__file__))
    binary = args[0] if args else os.path.join(here, "..", "build", "edgedecode")
    images = args[1] if len(args) > 1 else os.path.join(here, "..", "..", "shared", "testdata", "images")
    tmp = None
    if scale > 1:
        import shutil, tempfile
        tmp = tempfile.mkdtemp(prefix="doctor_bench_")
        for k in range(scale):
            shutil.copytree(images, os.path.join(tmp, f"copy{k}"))
        images = tmp
    from PIL import Image
    warnings.simplefilter("ignore")
    files = [os.path.join(d, f) for d, _, fs in os.walk(images) for f in fs]
    def pillow():
        ok = bad = 0
        for p in files:
            try:
                with Image.open(p) as im:
                    im.load()
                ok += 1
            except Exception:
                bad += 1
        return ok, bad
    def doctor(jobs):
        r = subprocess.run([binary, "doctor", "data", images, "--jobs", str(jobs), "--no-progress"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert r.returncode in (0, 1), r.returncode
    def pillow_process():
        subprocess.run([sys.executable, "-c", LOOP, images], check=True)
    def timed(fn, *a):
        t0 = time.perf_counter(); fn(*a); return time.perf_counter() - t0
    ok, bad = pillow()
    doctor(1)  # warm the page cache and the binary
    cores = os.cpu_count() or 1
    runs = {"loop": [], "proc": [], "d1": [], "dn": []}
    for _ in range(reps):  # alternate, so that machine noise hits both sides alike
        runs["loop"].append(timed(pillow))
        runs["proc"].append(timed(pillow_process))
        runs["d1"].append(timed(doctor, 1))
        runs["dn"].append(timed(doctor, cores))
    med = {k: statistics.median(v) for k, v in runs.items()}
    spread = {k: (max(v) - min(v)) / 2 / statistics.median(v) * 100 for k, v in runs.items()}
    print(f"files: {len(files)} under {images} (Pillow loaded {ok}, raised on {bad}); median of {reps}")
    print(f"pillow load loop, in this process:  {med['loop']*1000:8.1f} ms  (+-{spread['loop']:.0f}%)")
    print(f"pillow load loop, as a process:     {med['proc']*1000:8.1f} ms  (+-{spread['proc']:.0f}%)")
    for key, j in (("d1", 1), ("dn", cores)):
        print(f"doctor data --jobs {j} (process):    {med[key]*1000:8.1f} ms  (+-{spread[key]:.0f}%)   "
              f"ratio {med['loop']/med[key]:5.2f}x vs the loop, {med['proc']/med[key]:5.2f}x process vs process")
    print(f"target: >= 3x using both cores (--jobs {cores})")
    if tmp:
        shutil.rmtree(tmp)

if __name__ == "__main__":
    main()
