"""meshfs-cache (issue 12): stats, trim, clear and verify on a cache that
real mounts filled, the counters every mount adds to the cache's stats
file, safety while a mount reads, and bad arguments.

Counts are asserted against what happened (N models read once: N misses,
N conversions, no hits; read again after a remount: N hits) and against the
files on disk, never against meshfs-cache's own idea of them."""
import glob
import json
import os
import subprocess
import threading
import time
import unittest

from common import TreeCase, run, run_tests, tool
from mount import Mount

N = 6
TWO_G = 2 << 30


def grid_obj(n, lift):
    """An OBJ grid of 2(n-1)^2 triangles: each model's view is its own size."""
    lines = [f"v {i} {((i * j) % 7) * 0.1 + lift} {j}\n" for j in range(n) for i in range(n)]
    lines += [f"f {j * n + i + 1} {(j + 1) * n + i + 1} {j * n + i + 2}\n"
              for j in range(n - 1) for i in range(n - 1)]
    return "".join(lines)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class CacheTool(TreeCase):
    def setUp(self):
        super().setUp()
        os.makedirs(os.path.join(self.src, "sub"))
        self.models = []
        for i in range(N):
            rel = f"m{i}.obj" if i % 2 else f"sub/m{i}.obj"
            with open(os.path.join(self.src, rel), "w") as f:
                f.write(grid_obj(60 + 6 * i, i * 0.5))  # .fmd > 16 KiB: an entry file of its own
            self.models.append(rel)
        self.views = sorted(m[:-4] + ".fmd" for m in self.models)


    # ---- helpers ----

    def tool(self, *args):
        return run([tool("meshfs-cache"), "--cache-dir", self.cache] + list(args), timeout=120)

    def stats(self):
        p = self.tool("--json", "stats")
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def mount(self, *opts):
        return Mount(self.src, self.mnt, self.cache, "formats=fmd", *opts)

    def read_views(self):
        return {v: read(os.path.join(self.mnt, v)) for v in self.views}

    def files_on_disk(self, suffix):
        """Entry or manifest files of any container version (v1/, v2/ ...)."""
        return glob.glob(os.path.join(self.cache, "v*", "??", "*." + suffix))

    def fill(self):
        with self.mount() as m:
            views = self.read_views()
            xattr = m.stats()
        return views, xattr

    # ---- stats ----

    def test_stats_count_every_mount(self):
        first, xattr = self.fill()
        self.assertTrue(all(len(b) > 100 for b in first.values()), {k: len(b) for k, b in first.items()})
        # the mount's own counters: the bug was cache_misses=0 after N conversions
        self.assertEqual((xattr["conversions"], xattr["cache_misses"], xattr["cache_hits"]), (N, N, 0))
        s = self.stats()
        self.assertEqual((s["misses"], s["conversions"], s["hits"], s["failures"]), (N, N, 0, 0), s)
        entries, manifests = self.files_on_disk("e"), self.files_on_disk("m")
        self.assertEqual(len(entries), N)
        self.assertEqual((s["entries"], s["manifests"]), (N, len(manifests)), s)
        # each .fmd passes 16 KiB: an entry of its own, none inside its
        # model's entry; the model entries and any folder record make the .m
        self.assertEqual((s["model_entries"], s["views_inside"]), (N, 0), s)
        self.assertEqual(s["model_entries"] + s["folder_records"], s["manifests"], s)
        self.assertEqual(s["bytes"], sum(os.path.getsize(p) for p in entries + manifests))
        self.assertEqual(s["cap"], TWO_G)  # the mount's default, recorded by it
        self.assertEqual(s["cache_dir"], self.cache)
        self.assertGreater(s["updated"], time.time() - 600)

        # a second mount reads the same views: all hits, same bytes, no conversion
        with self.mount("cache_size=1G") as m:
            self.assertEqual(self.read_views(), first)
            xattr = m.stats()
        self.assertEqual((xattr["conversions"], xattr["cache_misses"], xattr["cache_hits"]), (0, 0, N))
        s = self.stats()
        self.assertEqual((s["misses"], s["conversions"], s["hits"]), (N, N, N), s)
        self.assertEqual(s["cap"], 1 << 30)

        text = self.tool("stats")
        self.assertEqual(text.returncode, 0, text.stderr)
        rows = dict(l.split(None, 1) for l in text.stdout.splitlines() if l.strip() and l[0] != "c")
        self.assertEqual(rows["hits"].split()[0], str(N))
        self.assertEqual(rows["misses"].strip(), str(N))
        self.assertEqual(rows["entries"].split()[0], str(N))
        self.assertIn("cap                1G", text.stdout)
        self.assertIn(self.cache, text.stdout)

    def test_counters_reach_the_file_while_mounted(self):
        with self.mount():
            self.read_views()
            deadline = time.time() + 10
            while time.time() < deadline and self.stats()["misses"] < N:
                time.sleep(0.2)
            s = self.stats()
            self.assertEqual((s["misses"], s["conversions"]), (N, N), s)

    def test_two_mounts_add_up(self):
        mnt2 = os.path.join(self.tmp, "mnt2")
        with self.mount() as a, Mount(self.src, mnt2, self.cache, "formats=fmd") as b:
            out = {}

            def reader(root, key):
                out[key] = {v: read(os.path.join(root, v)) for v in self.views}

            ts = [threading.Thread(target=reader, args=(r, k)) for r, k in ((self.mnt, "a"), (mnt2, "b"))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            xa, xb = a.stats(), b.stats()
        self.assertEqual(out["a"], out["b"])
        s = self.stats()
        # each view was asked for twice; whichever mount came second hit
        # (or converted too, when both asked at once: no cross-mount lock)
        self.assertEqual(s["hits"] + s["misses"], 2 * N, s)
        self.assertEqual(s["misses"], s["conversions"])
        self.assertEqual(s["hits"], xa["cache_hits"] + xb["cache_hits"])
        self.assertEqual(s["conversions"], xa["conversions"] + xb["conversions"])

    def test_meshfs_convert_runs_add_to_the_counters(self):
        out = os.path.join(self.tmp, "out")
        p = run([tool("meshfs-convert"), "-q", "--cache-dir", self.cache, "--formats", "fmd",
                 "-o", out, self.src])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        s = self.stats()
        self.assertEqual((s["misses"], s["conversions"], s["hits"], s["failures"]), (N, N, 0, 0), s)
        # a mount of the same tree finds every view the run made
        with self.mount() as m:
            views = self.read_views()
            self.assertEqual(m.stats()["conversions"], 0)
        s = self.stats()
        self.assertEqual((s["misses"], s["conversions"], s["hits"]), (N, N, N), s)
        self.assertEqual({v: read(os.path.join(out, v)) for v in self.views}, views)

    # ---- trim, clear ----

    def test_trim_leaves_at_most_size(self):
        self.fill()
        before = self.stats()
        size = before["bytes"] // 2
        p = self.tool("--json", "trim", f"{size}B")  # a bare number is GiB
        self.assertEqual(p.returncode, 0, p.stderr)
        res = json.loads(p.stdout)
        on_disk = sum(os.path.getsize(f) for f in self.files_on_disk("e") + self.files_on_disk("m"))
        self.assertLessEqual(on_disk, size)
        self.assertGreater(res["removed"], 0)
        self.assertEqual((res["bytes"], res["bytes_before"], res["size"]), (on_disk, before["bytes"], size))
        after = self.stats()
        self.assertEqual(after["evictions"], before["evictions"] + res["removed"])
        self.assertEqual(after["cap"], TWO_G)  # trim does not change the mounts' cap
        # under the size already: nothing goes
        p = self.tool("--json", "trim", "1G")
        self.assertEqual(json.loads(p.stdout)["removed"], 0)
        # sizes spelled as the mount's cache_size
        p = self.tool("trim", "0.5K")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLessEqual(sum(os.path.getsize(f) for f in self.files_on_disk("e")), 512)
        p = self.tool("trim", "0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.files_on_disk("e") + self.files_on_disk("m"), [])

    def test_trim_keeps_the_most_recently_used(self):
        self.fill()
        newest = max(self.files_on_disk("e"), key=os.path.getmtime)
        os.utime(newest)  # used last
        keep = os.path.getsize(newest)
        # trim keeps 90% of SIZE (as the cap does): room for that one file
        p = self.tool("trim", f"{keep * 10 // 9 + 20}B")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.files_on_disk("e") + self.files_on_disk("m"), [newest])

    def test_clear_empties_but_keeps_the_directory(self):
        self.fill()
        s = self.stats()
        p = self.tool("--json", "clear")
        self.assertEqual(p.returncode, 0, p.stderr)
        res = json.loads(p.stdout)
        self.assertEqual(res["removed"], s["entries"] + s["manifests"])
        self.assertEqual(res["freed"], s["bytes"])
        self.assertEqual(self.files_on_disk("e") + self.files_on_disk("m"), [])
        self.assertTrue(os.path.isfile(os.path.join(self.cache, "CACHEDIR.TAG")))
        after = self.stats()
        self.assertEqual((after["entries"], after["manifests"], after["bytes"]), (0, 0, 0))
        self.assertEqual((after["misses"], after["conversions"]), (N, N))  # counters stay
        # the cache still works: a mount converts again, same bytes
        again, xattr = self.fill()
        self.assertEqual(xattr["conversions"], N)
        self.assertEqual(len(self.files_on_disk("e")), N)

    def test_trim_and_clear_while_a_mount_reads(self):
        with self.mount() as m:
            want = self.read_views()
            stop = threading.Event()
            bad, reads = [], [0]

            def reader():
                while not stop.is_set():
                    for v in self.views:
                        try:
                            got = read(os.path.join(self.mnt, v))
                        except OSError as e:
                            bad.append((v, repr(e)))
                            continue
                        reads[0] += 1
                        if got != want[v]:
                            bad.append((v, len(got), len(want[v])))

            t = threading.Thread(target=reader)
            t.start()
            try:
                for i in range(6):
                    p = self.tool("clear") if i % 2 else self.tool("trim", "1K")
                    self.assertEqual(p.returncode, 0, p.stderr)
                    time.sleep(0.3)
            finally:
                stop.set()
                t.join()
            self.assertEqual(bad, [])
            self.assertGreater(reads[0], 2 * N)
            self.assertTrue(m.alive())
            self.assertEqual(self.read_views(), want)

    # ---- verify ----

    def test_verify_finds_and_repairs_a_flipped_byte(self):
        first, _ = self.fill()
        p = self.tool("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        checked = len(self.files_on_disk("e") + self.files_on_disk("m"))
        self.assertIn(f"checked {checked} files: 0 bad", p.stdout)

        victim = max(self.files_on_disk("e"), key=os.path.getsize)
        mid = os.path.getsize(victim) // 2  # payload, whatever the container's layout
        with open(victim, "r+b") as f:
            f.seek(mid)
            b = f.read(1)
            f.seek(mid)
            f.write(bytes([b[0] ^ 0x20]))
        p = self.tool("verify")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn(victim + ": checksum mismatch", p.stdout)
        self.assertIn("1 bad, 0 removed", p.stdout)
        self.assertTrue(os.path.exists(victim))  # reported, not removed

        p = self.tool("--json", "verify", "--repair")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        res = json.loads(p.stdout)
        self.assertEqual(res["bad"], [{"path": victim, "error": "checksum mismatch", "removed": True}])
        self.assertEqual((res["checked"], res["bad_count"], res["removed"]), (checked, 1, 1))
        self.assertFalse(os.path.exists(victim))
        self.assertEqual(self.stats()["corrupt_discarded"], 1)

        p = self.tool("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # the mount converts that one model again, to the same bytes
        with self.mount() as m:
            self.assertEqual(self.read_views(), first)
            self.assertEqual(m.stats()["conversions"], 1)

    def test_verify_reports_a_truncated_manifest(self):
        self.fill()
        victim = self.files_on_disk("m")[0]
        os.truncate(victim, 3)
        p = self.tool("verify", "--repair")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn(victim + ": ", p.stdout)
        self.assertIn("(removed)", p.stdout)
        self.assertFalse(os.path.exists(victim))

    # ---- arguments ----

    def test_bad_arguments_exit_2_naming_them(self):
        self.fill()
        cases = [
            (["frobnicate"], "frobnicate"),
            (["trim"], "missing SIZE"),
            (["trim", "12abc"], "12abc"),
            (["trim", "-5"], "-5"),
            (["trim", "1G", "2G"], "'2G'"),
            # another command's option, named as such wherever it stands
            (["trim", "--repair", "1G"], "trim: unknown option '--repair' (trim takes SIZE only)"),
            (["stats", "extra"], "'extra'"),
            (["clear", "now"], "'now'"),
            (["verify", "--fix"], "--fix"),
            (["--bogus", "stats"], "--bogus"),
            ([], "usage"),
        ]
        for args, needle in cases:
            p = self.tool(*args)
            self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
            self.assertIn(needle, p.stderr, args)
        p = run([tool("meshfs-cache"), "stats", "--cache-dir"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--cache-dir", p.stderr)
        # a bad warm SRC is a bad argument, not a cache that cannot be used
        # (it gave 3)
        missing = os.path.join(self.tmp, "nothing")
        a_file = os.path.join(self.tmp, "a-file")
        with open(a_file, "w") as f:
            f.write("x")
        for src, why in ((missing, "No such file or directory"), (a_file, "not a folder")):
            p = self.tool("warm", src)
            self.assertEqual(p.returncode, 2, (src, p.stderr))
            self.assertIn(f"warm: SRC {src}: {why}", p.stderr)
        self.assertEqual(len(self.files_on_disk("e")), N)  # nothing was touched

    def test_a_folder_that_is_not_a_cache_is_refused(self):
        missing = os.path.join(self.tmp, "nothing")
        p = run([tool("meshfs-cache"), "--cache-dir", missing, "stats"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(missing, p.stderr)
        self.assertFalse(os.path.exists(missing))
        # a folder of the user's own files: clear must not touch it
        p = run([tool("meshfs-cache"), "--cache-dir", self.src, "clear"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("not a meshfs cache", p.stderr)
        self.assertEqual(sorted(os.listdir(self.src)), sorted(["sub"] + [m for m in self.models if "/" not in m]))

    def test_help_and_options_anywhere(self):
        p = run([tool("meshfs-cache"), "--help"])
        self.assertEqual(p.returncode, 0)
        for word in ("stats", "trim SIZE", "clear", "verify [--repair]", "--cache-dir", "--json"):
            self.assertIn(word, p.stdout)
        self.fill()
        a = self.tool("stats", "--json")
        b = run([tool("meshfs-cache"), "--json", "stats", "--cache-dir=" + self.cache])
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(json.loads(a.stdout)["entries"], json.loads(b.stdout)["entries"])


if __name__ == "__main__":
    run_tests()
