"""Issue 35, items 5 and 6: a tree converted in shards, and keys that do not
depend on the formats asked for.

- `meshfs-cache warm --shard k/3` three times into one cache, then a full
  mount reading every view converts nothing, with the bytes of an unsharded
  meshfs-convert; the shards' counts add up to the tree's models.
- `meshfs-convert --shard k/3`: each model in exactly one shard's report,
  each output file (packages included) written by exactly one shard, and
  their union the unsharded output, byte for byte.
- A formats=gmf mount, then a full mount of the same cache: the .gmf is not
  made again (the full mount's runs make the other views only); the same
  between two machines through a real nginx.
- Bad --shard values: exit status 2 and a message naming the option."""
import json
import os
import re
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SOURCE, run, run_tests, tempdir, tool  # noqa: E402
from mount import Mount  # noqa: E402
from nginx import NGINX, Nginx  # noqa: E402

EXAMPLES = os.path.join(SOURCE, "examples", "assets")
# examples/assets three times: 15 models in 12 folders (4 packages a copy)
COPIES = ("a", "b", "c")
MODELS = sorted(os.path.join(c, m) for c in COPIES
                for m in ("characters/strip.gltf", "crate/crate.obj", "props/cone.ply",
                          "props/tetra.stl", "scene/street.dae"))
MODEL_EXT = (".gltf", ".obj", ".ply", ".stl", ".dae", ".bin", ".mtl", ".png", ".txt")
MADE = re.compile(r"debug: (\S+): views made: (\S+)")


def make_tree(src):
    for c in COPIES:
        shutil.copytree(EXAMPLES, os.path.join(src, c), symlinks=True)


def files_under(root):
    """{relative path: bytes} of every regular file under root."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = f.read()
    return out


def views_of(tree):
    """The views (and packages) of a tree read through a mount: the source
    files it also shows are left out."""
    return {k: v for k, v in tree.items() if not k.endswith(MODEL_EXT)}


class Shards(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.td = tempdir()
        cls.base = cls.td.name
        cls.src = os.path.join(cls.base, "src")
        make_tree(cls.src)
        # the unsharded output, converted afresh: what every shard's union
        # and every mount below must equal
        fresh = os.path.join(cls.base, "fresh")
        p = run([tool("meshfs-convert"), "--no-cache", "-q", "-j", "2", "-o", fresh, cls.src])
        assert p.returncode == 0, p.stderr
        cls.fresh = files_under(fresh)
        assert len(cls.fresh) == len(MODELS) * 8 + 12, sorted(cls.fresh)

    @classmethod
    def tearDownClass(cls):
        cls.td.cleanup()

    def dir(self, name):
        path = os.path.join(self.base, self.id().rsplit(".", 1)[1], name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def warm(self, cache, *opts):
        p = run([tool("meshfs-cache"), "--cache-dir", cache, "--json", "warm", self.src, "-j", "2",
                 *opts])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def assert_views_are_fresh(self, tree):
        views = views_of(tree)
        self.assertEqual(set(views), set(self.fresh))
        for k, v in self.fresh.items():
            self.assertEqual(views[k], v, k)

    def test_three_warm_shards_then_a_full_mount_converts_nothing(self):
        cache = self.dir("cache")
        counts = [self.warm(cache, "--shard", f"{k}/3") for k in (1, 2, 3)]
        for k, c in enumerate(counts, 1):
            self.assertEqual((c["shard"], c["models"], c["up_to_date"], c["failed"]),
                             (f"{k}/3", len(MODELS), 0, 0), c)
        # every model in exactly one shard: the shards' conversions add up
        self.assertEqual(sum(c["converted"] for c in counts), len(MODELS), counts)
        self.assertGreater(min(c["converted"] for c in counts), 0, counts)
        # a shard run again finds its own models done
        self.assertEqual(self.warm(cache, "--shard", "2/3")["up_to_date"], counts[1]["converted"])
        mnt = self.dir("mnt")
        with Mount(self.src, mnt, cache) as m:
            tree = files_under(mnt)
            st = m.stats()
        self.assertEqual(st["conversions"], 0)
        self.assert_views_are_fresh(tree)

    def test_convert_shards_write_the_tree_once_between_them(self):
        cache = self.dir("cache")
        seen, written = {}, {}
        for k in (1, 2, 3):
            out, rpath = self.dir(f"out{k}"), self.dir(f"report{k}.json")
            p = run([tool("meshfs-convert"), "--cache-dir", cache, "-j", "2", "--shard", f"{k}/3",
                     "--report", rpath, "-o", out, self.src])
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(rpath) as f:
                rows = [json.loads(x) for x in f]
            models = [r["model"] for r in rows if "model" in r]
            self.assertTrue(all(r["ok"] for r in rows if "model" in r), rows)
            # one "ok" line a model of the shard, one a package it wrote
            lines = [x for x in p.stdout.splitlines() if x.startswith(("ok ", "up to date "))]
            pkgs = [x for x in lines if "game_resources.lgepkg" in x]
            self.assertEqual(len(lines), len(models) + len(pkgs), p.stdout)
            self.assertRegex(p.stderr, rf"\(shard {k}/3: {len(models)} of {len(MODELS)} models;")
            for mdl in models:
                seen.setdefault(mdl, []).append(k)
            for rel, data in files_under(out).items():
                if rel.startswith("."):
                    continue  # the report
                written.setdefault(rel, []).append(k)
                self.assertEqual(data, self.fresh.get(rel), rel)
        self.assertEqual(sorted(seen), MODELS)
        self.assertEqual({m: len(ks) for m, ks in seen.items()}, {m: 1 for m in MODELS})
        # every view and every package by exactly one shard, none missing
        self.assertEqual(sorted(written), sorted(self.fresh))
        self.assertEqual([r for r, ks in written.items() if len(ks) != 1], [])
        # a shard alone, with nothing of the others' in its cache: its
        # packages still hold every model of their folders
        for k in (1, 2, 3):
            out = self.dir(f"alone{k}")
            p = run([tool("meshfs-convert"), "--no-cache", "-q", "--shard", f"{k}/3", "-o", out,
                     self.src])
            self.assertEqual(p.returncode, 0, p.stderr)
            got = files_under(out)
            self.assertEqual(sorted(got), sorted(r for r, ks in written.items() if ks == [k]))
            for rel, data in got.items():
                self.assertEqual(data, self.fresh[rel], rel)

    def test_a_gmf_mount_then_a_full_mount_share_the_gmf(self):
        cache = self.dir("cache")
        mnt = self.dir("mnt")
        with Mount(self.src, mnt, cache, "formats=gmf") as m:
            gmf = {k: v for k, v in files_under(mnt).items() if k.endswith(".gmf")}
            self.assertEqual(m.stats()["conversions"], len(MODELS))
        self.assertEqual(len(gmf), len(MODELS))
        with Mount(self.src, mnt, cache, "log_level=debug") as m:
            tree = files_under(mnt)
            st = m.stats()
            log = m.output()
        # one run a model, for the views the gmf mount did not show
        self.assertEqual(st["conversions"], len(MODELS))
        made = MADE.findall(log)
        self.assertEqual(sorted(x for x, _ in made), MODELS, log)
        self.assertEqual({v for _, v in made}, {"fmd,fmi,dem,vrt,tri,sph,tex"}, made)
        self.assert_views_are_fresh(tree)
        self.assertEqual({k: tree[k] for k in gmf}, gmf)
        # and a warm with other formats finds what both made
        self.assertEqual(self.warm(cache, "--formats", "fmd:gmf")["up_to_date"], len(MODELS))


class Remote(unittest.TestCase):
    """A formats=gmf machine feeds a full one through nginx: the full
    machine converts each model once, for its other views only."""

    def test_a_gmf_machine_feeds_a_full_machine(self):
        if not os.path.exists(NGINX):
            self.skipTest("nginx is not installed (scripts/setup installs nginx-light)")
        td = tempdir()
        self.addCleanup(td.cleanup)
        nginx = Nginx(os.path.join(td.name, "nginx"))
        self.addCleanup(nginx.stop)
        url = "remote=" + nginx.url("studio")

        def machine(name, *opts):
            src = os.path.join(td.name, name, "assets", "src")  # another path each
            make_tree(src)
            return Mount(src, os.path.join(td.name, name, "mnt"),
                         os.path.join(td.name, name, "cache"), url, "remote_timeout_ms=2000", *opts)

        with machine("a", "formats=gmf") as a:
            gmf = {k: v for k, v in files_under(a.mnt).items() if k.endswith(".gmf")}
            for _ in range(600):  # the upload queue drains
                st = a.stats()
                if st["remote_queue"] == 0:
                    break
                time.sleep(0.05)
            self.assertEqual((st["conversions"], st["remote_queue"], st["remote_dropped"]),
                             (len(MODELS), 0, 0), st)
        self.assertEqual(len(gmf), len(MODELS))
        with machine("b", "log_level=debug") as b:
            tree = files_under(b.mnt)
            st = b.stats()
            log = b.output()
        self.assertEqual(st["conversions"], len(MODELS))
        self.assertGreater(st["remote_hits"], 0)
        made = MADE.findall(log)
        self.assertEqual(sorted(x for x, _ in made), MODELS, log)
        self.assertEqual({v for _, v in made}, {"fmd,fmi,dem,vrt,tri,sph,tex"}, made)
        self.assertEqual({k: tree[k] for k in gmf}, gmf)


class BadShard(unittest.TestCase):
    BAD = {
        "0/3": "K must be from 1 to N (here 1 to 3)",
        "4/3": "K must be from 1 to N (here 1 to 3)",
        "1/0": "N must be from 1 to 1000000",
        "x/y": "expected K/N, two whole numbers (shard K of N, K from 1 to N), e.g. 2/8",
        "3": "expected K/N",
        "-1/3": "expected K/N",
        "1/3/5": "expected K/N",
    }

    def test_bad_values_are_refused_naming_the_option(self):
        td = tempdir()
        self.addCleanup(td.cleanup)
        src = os.path.join(td.name, "src")
        make_tree(src)
        cache = os.path.join(td.name, "cache")
        for value, why in self.BAD.items():
            p = run([tool("meshfs-cache"), "--cache-dir", cache, "warm", src, "--shard", value])
            self.assertEqual(p.returncode, 2, (value, p.stderr))
            self.assertIn(f"meshfs-cache: warm: --shard '{value}': {why}", p.stderr)
            p = run([tool("meshfs-convert"), "--cache-dir", cache, "-o",
                     os.path.join(td.name, "out"), "--shard", value, src])
            self.assertEqual(p.returncode, 2, (value, p.stderr))
            self.assertIn(f"meshfs-convert: --shard '{value}': {why}", p.stderr)
        # refused before anything was made
        self.assertFalse(os.path.exists(cache))
        self.assertFalse(os.path.exists(os.path.join(td.name, "out")))
        p = run([tool("meshfs-cache"), "warm", src, "--shard"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("warm: --shard: missing value", p.stderr)


if __name__ == "__main__":
    run_tests()
