"""Bad input to meshfs-convert: every file gets a clear error naming it and
the reason, the exit status is non-zero, and the batch carries on."""
import os
import random
import shutil
import unittest

from common import CORPUS, FORMATS, convert, run, sanitizer_build, tempdir, tool


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


class BadInput(unittest.TestCase):
    def make_tree(self, src):
        good = os.path.join(CORPUS, "OBJ", "box.obj")
        shutil.copy(good, os.path.join(src, "good.obj"))
        write(os.path.join(src, "empty.obj"), b"")
        with open(os.path.join(CORPUS, "FBX", "box.fbx"), "rb") as f:
            fbx = f.read()
        write(os.path.join(src, "truncated.fbx"), fbx[: len(fbx) // 3])
        rnd = random.Random(1234)
        for ext in ("obj", "fbx", "dae", "glb", "ply", "stl", "3ds", "x"):
            write(os.path.join(src, "random", f"noise.{ext}"), bytes(rnd.randrange(256) for _ in range(4096)))
        # References that leave the source root must be refused, by name.
        write(os.path.join(src, "escape", "mtl.obj"),
              b"mtllib ../../etc/passwd\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
        write(os.path.join(src, "escape", "abs.obj"),
              b"mtllib /etc/passwd\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
        write(os.path.join(src, "escape", "buf.gltf"),
              b'{"asset":{"version":"2.0"},"buffers":[{"uri":"../../etc/passwd","byteLength":12}],'
              b'"bufferViews":[{"buffer":0,"byteLength":12}],"accessors":[{"bufferView":0,'
              b'"componentType":5126,"count":1,"type":"VEC3","max":[0,0,0],"min":[0,0,0]}],'
              b'"meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}],"nodes":[{"mesh":0}],'
              b'"scenes":[{"nodes":[0]}],"scene":0}')
        os.symlink("/etc/passwd", os.path.join(src, "escape", "link.mtl"))
        write(os.path.join(src, "escape", "link.obj"),
              b"mtllib link.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")

    def test_bad_files_fail_clearly_and_batch_carries_on(self):
        with tempdir() as src, tempdir() as out:
            self.make_tree(src)
            shutil.copytree(os.path.join(CORPUS, "invalid"), os.path.join(src, "invalid"))
            p, rows = convert([src], out, "--timeout", "60")
            self.assertEqual(p.returncode, 1, p.stderr)
            by = {r["model"]: r for r in rows}
            # the good model converted to every format despite its neighbours
            self.assertTrue(by["good.obj"]["ok"], by["good.obj"])
            for f in FORMATS:
                self.assertTrue(os.path.getsize(os.path.join(out, f"good.{f}")) > 0)
            failed = [m for m, r in by.items() if not r["ok"]]
            for m in failed:
                self.assertTrue(by[m]["error"], m)
                # the summary names the file and the reason
                self.assertIn(m, p.stderr)
                self.assertIn(by[m]["error"][:60], p.stderr)
                # a failed model leaves no output behind
                base = os.path.splitext(m)[0]
                for f in FORMATS:
                    self.assertFalse(os.path.exists(os.path.join(out, f"{base}.{f}")), (m, f))
            for m in ("empty.obj", "truncated.fbx", "invalid/empty.x", "invalid/OutOfMemory.off",
                      "invalid/malformed.obj"):
                self.assertIn(m, failed)
            for ext in ("obj", "fbx", "dae", "glb", "ply", "stl", "3ds", "x"):
                self.assertIn(f"random/noise.{ext}", failed)
            # the refused path as the importer asked for it (relative to the source root)
            self.assertIn("refused to open 'escape/../../etc/passwd': outside the source root",
                          by["escape/mtl.obj"]["error"])
            # assimp's OBJ reader puts an absolute mtllib under the model's folder
            # ("escape//etc/passwd"): not found there, so nothing outside was read
            self.assertTrue(by["escape/abs.obj"]["ok"], by["escape/abs.obj"])
            self.assertEqual(by["escape/abs.obj"]["deps"], ["escape/abs.obj"])
            self.assertIn("refused to open", by["escape/buf.gltf"]["error"])
            self.assertIn("../../etc/passwd", by["escape/buf.gltf"]["error"])
            self.assertIn("refused to open 'escape/link.mtl'", by["escape/link.obj"]["error"])
            # nothing outside the root was read
            for r in rows:
                for d in r["deps"]:
                    self.assertFalse(d.startswith("/") or d.startswith(".."), (r["model"], d))

    def test_missing_input_is_reported(self):
        with tempdir() as out:
            p, rows = convert(["/nonexistent/model.fbx"], out)
            self.assertEqual(p.returncode, 1)
            self.assertIn("/nonexistent/model.fbx", p.stderr)
            self.assertIn("No such file or directory", p.stderr)

    def test_usage_errors(self):
        with tempdir() as out:
            p, _ = convert([os.path.join(CORPUS, "OBJ", "box.obj")], out, "--formats", "fmd,bogus",
                           report=False)
            self.assertEqual(p.returncode, 2)
            self.assertIn("unknown format 'bogus'", p.stderr)
            # an empty OUTDIR failed every model, naming no option:
            # "/game_resources.lgepkg: left out box.obj: : No such file or directory"
            p, _ = convert([os.path.join(CORPUS, "OBJ", "box.obj")], out, "-o", "", report=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--output: empty path", p.stderr)
            # no INPUT: the usage, then the reason as its last line
            p = run([tool("meshfs-convert"), "-o", out], timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertTrue(p.stderr.startswith("usage: meshfs-convert"), p.stderr)
            self.assertTrue(p.stderr.endswith(
                "meshfs-convert: no INPUT given (a model file, or a folder of them)\n"), p.stderr)

    def test_folder_that_cannot_be_listed_fails_the_run(self):
        # its models were left out with one warning line, and status 0
        with tempdir() as tmp:
            os.chmod(tmp, 0o755)
            src, out = os.path.join(tmp, "src"), os.path.join(tmp, "out")
            for rel in ("ok/a.obj", "locked/b.obj"):
                os.makedirs(os.path.join(src, os.path.dirname(rel)), exist_ok=True)
                shutil.copy(os.path.join(CORPUS, "OBJ", "box.obj"), os.path.join(src, rel))
            os.chmod(os.path.join(src, "locked"), 0)
            os.makedirs(out)
            # root lists any folder: run as nobody then
            who = []
            if os.geteuid() == 0:
                os.chown(out, 65534, 65534)
                who = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            p = run(who + [tool("meshfs-convert"), "-q", "--no-cache", "-o", out, src], timeout=300)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(f"warning: {src}/locked: Permission denied", p.stderr)
            self.assertIn("1 folder could not be walked (said above); the models in them were "
                          "not converted", p.stderr)
            self.assertIn("1 converted, 0 up to date, 0 failed", p.stderr)
            self.assertTrue(os.path.exists(os.path.join(out, "ok", "a.fmd")))
            # meshfs-cache warm, the same
            cache = os.path.join(tmp, "cache")
            os.makedirs(cache)
            if who:
                os.chown(cache, 65534, 65534)
            p = run(who + [tool("meshfs-cache"), "--cache-dir", cache, "warm", src], timeout=300)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("warm: 1 folder could not be walked", p.stderr)
            # a file system's lost+found (root's, 0700) is said, not counted
            os.chmod(os.path.join(src, "locked"), 0o755)
            os.makedirs(os.path.join(src, "lost+found"), 0o700)
            p = run(who + [tool("meshfs-convert"), "-q", "--no-cache", "-o", out, src], timeout=300)
            if who:
                self.assertIn(f"warning: {src}/lost+found: Permission denied", p.stderr)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("could not be walked", p.stderr)

    def test_a_loop_of_links_is_said_as_one(self):
        # two folders linked to each other were walked round and round to
        # the depth bound, and the run failed with "more than 64 deep"
        with tempdir() as tmp:
            src, out = os.path.join(tmp, "src"), os.path.join(tmp, "out")
            for rel in ("A/a.obj", "B/b.obj"):
                os.makedirs(os.path.join(src, os.path.dirname(rel)), exist_ok=True)
                shutil.copy(os.path.join(CORPUS, "OBJ", "box.obj"), os.path.join(src, rel))
            os.symlink("../B", os.path.join(src, "A", "toB"))
            os.symlink("../A", os.path.join(src, "B", "toA"))
            p = run([tool("meshfs-convert"), "-q", "--no-cache", "-f", "vrt", "-o", out, src],
                    timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("64 deep", p.stderr)
            self.assertIn(f"warning: {src}/A/toB/toA: symbolic link not followed: it leads back "
                          "to a folder this walk is in (a loop)", p.stderr)
            self.assertIn(f"warning: {src}/B/toA/toB: symbolic link not followed: it leads back "
                          "to a folder this walk is in (a loop)", p.stderr)
            # each model once by its own folder, once through the other's link
            self.assertEqual(sorted(os.path.relpath(os.path.join(d, f), out)
                                    for d, _, fs in os.walk(out) for f in fs if f.endswith(".vrt")),
                             ["A/a.vrt", "A/toB/b.vrt", "B/b.vrt", "B/toA/a.vrt"])

    def test_folders_too_deep_fail_the_run(self):
        # a model 70 folders down was left out without a word, status 0
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            deep = os.path.join(src, *["d"] * 70)
            os.makedirs(deep)
            box = os.path.join(CORPUS, "OBJ", "box.obj")
            shutil.copy(box, os.path.join(src, "top.obj"))
            shutil.copy(box, os.path.join(deep, "low.obj"))
            p, rows = convert([src], os.path.join(tmp, "out"), "-f", "fmd")
            self.assertEqual(p.returncode, 1, p.stderr)
            cut = os.path.join(src, *["d"] * 65)  # the 65th level down
            self.assertIn(f"warning: {cut}: folders nested more than 64 deep are not walked",
                          p.stderr)
            self.assertIn("1 folder could not be walked (said above)", p.stderr)
            models = [r for r in rows if "model" in r]
            self.assertEqual([r["model"] for r in models], ["top.obj"])
            self.assertTrue(models[0]["ok"])
            # and the report has it, as it has a folder that cannot be listed
            self.assertIn({"warning": "folders nested more than 64 deep are not walked",
                           "path": cut}, rows)

    def test_no_model_found_says_so(self):
        # status 1, and with -q not a line on why
        with tempdir() as tmp:
            empty, dir_obj = os.path.join(tmp, "empty"), os.path.join(tmp, "x.obj")
            os.makedirs(empty)
            os.makedirs(dir_obj)
            p, _ = convert([empty, dir_obj], os.path.join(tmp, "out"), report=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(f"no model found in {empty} {dir_obj} (a model is a file with a "
                          "model extension", p.stderr)

    def test_model_bigger_than_the_memory_limit(self):
        # assimp's reason was 'Unable to open file "big.obj".'
        if sanitizer_build():
            self.skipTest("a sanitized worker has no memory limit (meshfs-worker.c)")
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            os.makedirs(src)
            shutil.copy(os.path.join(CORPUS, "OBJ", "box.obj"), os.path.join(src, "good.obj"))
            for name in ("big.obj", "big.stl"):
                with open(os.path.join(src, name), "wb") as f:
                    f.truncate(200 << 20)  # sparse: no disk, 200 MiB to map
            p, rows = convert([src], os.path.join(tmp, "out"), "-f", "fmd", "--memory", "100M")
            self.assertEqual(p.returncode, 1, p.stderr)
            by = {r["model"]: r for r in rows if "model" in r}
            self.assertTrue(by["good.obj"]["ok"], by["good.obj"])
            for name in ("big.obj", "big.stl"):
                self.assertEqual(by[name]["error"],
                                 "out of memory (limit 100 MiB): out of memory while reading "
                                 f"inputs (mapping {name}, 209715200 bytes)")
                self.assertIn(f"{name}: out of memory (limit 100 MiB)", p.stderr)

    def test_report_that_cannot_be_written(self):
        # it was opened after the run: a message, and status 0 all the same
        model = os.path.join(CORPUS, "OBJ", "box.obj")
        with tempdir() as tmp:
            out = os.path.join(tmp, "out")
            for bad, why in ((tmp, "Is a directory"), ("", "No such file or directory"),
                             (os.path.join(tmp, "new") + "/", "Is a directory"),
                             (os.path.join(model, "r.json"), "Not a directory")):
                p, _ = convert([model], out, "--report", bad, report=False)
                self.assertEqual(p.returncode, 2, (bad, p.stderr))
                self.assertIn(f"--report '{bad}': {why}", p.stderr)
                self.assertFalse(os.path.exists(out), bad)  # refused before converting
                self.assertFalse(os.path.exists(os.path.join(tmp, "new")), bad)
            # a write that fails at the end fails the run
            p, _ = convert([model], out, "--report", "/dev/full", report=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("--report '/dev/full': No space left on device", p.stderr)
            # a report inside an OUTDIR not made yet still works
            p, _ = convert([model], out + "2", "--report", os.path.join(out + "2", "r.json"),
                           report=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(os.path.getsize(os.path.join(out + "2", "r.json")) > 0)


if __name__ == "__main__":
    unittest.main()
