#!/usr/bin/python3
"""doctor data vs a Pillow load loop on the same image files, same machine, same run.

usage: /usr/bin/python3 bench/doctor_vs_pillow.py [EDGEDECODE_BINARY] [IMAGES_DIR] [--reps N] [--scale K]
--scale K copies the set K times into a temporary directory first (a dataset-sized run, where
process start no longer dominates and both cores have work).
Pillow: Image.open + load() on every file (the loop a dataset loader runs), errors caught.
doctor: `edgedecode doctor data DIR --jobs J` (sniff + full decode + classify every file).
Best of N repetitions each; prints seconds and the ratio Pillow/doctor.
"""
import os, subprocess, sys, time, warnings

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
    def best(fn, *a):
        t = []
        for _ in range(reps):
            t0 = time.perf_counter(); fn(*a); t.append(time.perf_counter() - t0)
        return min(t)
    ok, bad = pillow()
    tp = best(pillow)
    cores = os.cpu_count() or 1
    t1 = best(doctor, 1)
    tn = best(doctor, cores)
    print(f"files: {len(files)} under {images} (Pillow loaded {ok}, raised on {bad})")
    print(f"pillow load loop (1 process):   {tp*1000:8.1f} ms")
    print(f"doctor data --jobs 1:           {t1*1000:8.1f} ms   ratio {tp/t1:5.2f}x")
    print(f"doctor data --jobs {cores}:           {tn*1000:8.1f} ms   ratio {tp/tn:5.2f}x  (target >= 3x)")
    if tmp:
        shutil.rmtree(tmp)
    print("doctor times include process start, the walk, sniffing, full decode and the report.")

if __name__ == "__main__":
    main()
