"""notebooks/explore_run.ipynb: executed headless on the sample run, and committed stripped."""

from __future__ import annotations

import ast
import base64
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "explore_run.ipynb"
PNG = b"\x89PNG\r\n\x1a\n"


def _code(cell) -> str:
    # IPython magics (%matplotlib inline) are not Python.
    return "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith("%"))


def test_committed_stripped_with_its_parameters_first() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code" and first.metadata.get("tags") == ["parameters"]
    body = ast.parse(first.source).body
    assert all(isinstance(node, ast.Assign) for node in body)  # parameters only, no logic
    assigned = {t.id for node in body for t in node.targets if isinstance(t, ast.Name)}
    assert assigned == {"RUN", "SCENARIO", "GROUP"}
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [(c.outputs, c.execution_count) for c in code] == [([], None)] * len(code)


def test_imports_only_rmqsim_and_plotting() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    imported = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(_code(cell))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add((node.module or "").split(".")[0])
    assert imported and imported <= {"rmqsim", "matplotlib"}, imported


def _images_per_section(nb) -> dict[str, list[bytes]]:
    """PNG outputs under each "## " heading of the executed notebook."""
    sections: dict[str, list[bytes]] = {}
    current = None
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            current = cell.source.splitlines()[0][3:]
            sections[current] = []
        elif cell.cell_type == "code" and current is not None:
            for out in cell.outputs:
                if "image/png" in out.get("data", {}):
                    sections[current].append(base64.b64decode(out["data"]["image/png"]))
    return sections


def test_runs_headless_on_a_sample_run(sample_run, tmp_path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[
        0
    ].source = f'RUN = {str(sample_run)!r}\nSCENARIO = "pay-consumer-8-to-12"\nGROUP = "pay-consumer"'
    # Run from an empty directory: the notebook must find everything through RUN.
    NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # raises CellExecutionError on the first failing cell

    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    focus = next(out for out in outputs if "Focus(" in out.get("data", {}).get("text/plain", ""))
    assert focus["data"]["text/plain"] == (
        "Focus(scenario='pay-consumer-8-to-12', group='pay-consumer', last_phase=2)"
    )
    sections = _images_per_section(nb)
    counts = {title.split(",")[0]: len(images) for title, images in sections.items()}
    assert counts == {
        "Strategy comparison": 2,  # balance, then moves against the fewest possible
        "One group's clients": 1,
        "Movement per strategy": 1,
        "Split-brain risk": 1,  # the sample has a stale_view scenario
    }
    assert all(png.startswith(PNG) for images in sections.values() for png in images)
    # The split-brain section also shows its table: the seven strategies that ran on pay-consumer.
    table = next(out for out in outputs if "text/html" in out.get("data", {}))
    assert table["data"]["text/html"].count("pay-consumer-split-brain") == 7
