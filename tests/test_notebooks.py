"""The three notebooks, executed as a user would run them (nbclient, a real ipykernel) with the
scripted fake models: no cell errors, every picture is there, nothing is written into the repo."""

from __future__ import annotations

import os

import nbformat
import pytest
from conftest import REPO, repo_snapshot
from nbclient import NotebookClient

NOTEBOOKS = REPO / "notebooks"
PICTURES = {
    "01_route.ipynb": ['id="graph"', 'class="bar-chart"'],
    "02_evaluate.ipynb": ['id="graph"', 'class="ci-chart"', 'id="lineage"'],
    "03_evolve.ipynb": ['id="graph"', 'class="ci-chart"', 'id="lineage"'],
}


def svgs(book: nbformat.NotebookNode) -> list[str]:
    return [out["data"]["image/svg+xml"] for cell in book.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if "image/svg+xml" in out.get("data", {})]


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_notebook_executes_and_shows_its_pictures(name, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    before, listing = repo_snapshot(), sorted(p.name for p in NOTEBOOKS.iterdir())
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    errors = [o for c in book.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    pictures = svgs(book)
    for marker in PICTURES[name]:
        assert any(marker in svg and "<g class=" in svg for svg in pictures), (name, marker)
    assert repo_snapshot() == before and sorted(p.name for p in NOTEBOOKS.iterdir()) == listing
