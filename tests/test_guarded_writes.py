"""Every file a command writes goes through the shared guarded writer (`iclr25.shared.files`): a repo-wide scan of
the packages' and the shared layer's code for writes that bypass it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Calls that write or delete files, by the dotted name they are called through (`np.save`) or their method name.
WRITING_FUNCTIONS = {
    "np.save", "np.savez", "np.savez_compressed", "np.savetxt", "numpy.save", "torch.save", "json.dump",
    "pickle.dump", "shutil.rmtree", "shutil.move", "shutil.copy", "shutil.copy2", "shutil.copyfile",
    "shutil.copytree", "os.remove", "os.unlink", "os.replace", "os.rename", "os.rmdir",
}  # fmt: skip
WRITING_METHODS = {
    "write_text", "write_bytes", "savefig", "to_pickle", "to_csv", "to_parquet", "to_feather", "to_hdf",
    "to_json", "unlink", "rmdir", "touch", "symlink_to", "hardlink_to",
}  # fmt: skip
OPENERS = {"open", "os.fdopen", "io.open", "gzip.open", "bz2.open", "lzma.open"}

# The shared layer's own machinery, each with why it may write directly.
ALLOWED = {
    "shared/src/iclr25/shared/files.py": "the guarded writer itself",
    "shared/src/iclr25/shared/run.py": "the run layer: makes, replaces and removes the run folders it created",
    "shared/src/iclr25/shared/logging.py": "appends metrics to metrics.jsonl inside the run folder it is given",
    "shared/src/iclr25/shared/testing.py": "test helper: writes a worker script into a test's temporary folder",
}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _writing_mode(call: ast.Call, position: int) -> bool:
    mode = next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None and len(call.args) > position:
        mode = call.args[position]
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


def bypassing_writes(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: call` for each call in `source` that writes a file without the guarded writer. A call inside a
    lambda handed to `write_with` (which gives it the guarded file object) is the writer's own use, and so is a
    third-party writer (`lmdb.open`) in a function that passes its target through `claim_path` first."""
    tree = ast.parse(source, filename)
    inside_writer: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "write_with":
            for arg in node.args[1:]:
                if isinstance(arg, ast.Lambda):
                    inside_writer.update(id(n) for n in ast.walk(arg))
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    claiming = {
        scope
        for scope in ast.walk(tree)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] == "claim_path" for n in ast.walk(scope))
    }

    def in_claiming_function(node: ast.AST) -> bool:
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node in claiming
        return False

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in inside_writer:
            continue
        name = _dotted(node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        to_text = (  # to_csv()/to_json() without a path return the text
            method in ("to_csv", "to_json") and not node.args and not any(k.arg == "path_or_buf" for k in node.keywords)
        )
        writes = (
            name in WRITING_FUNCTIONS
            or (method in WRITING_METHODS and not to_text)
            or (name in OPENERS and _writing_mode(node, 1))
            or (method == "open" and name not in OPENERS and _writing_mode(node, 0))  # Path.open("w")
            or (
                name == "lmdb.open"
                and not any(k.arg == "readonly" for k in node.keywords)
                and not in_claiming_function(node)
            )
        )
        if writes:
            found.append(f"{filename}:{node.lineno}: {name or method}(...)")
    return found


def _code_files() -> list[Path]:
    return sorted([*ROOT.glob("packages/*/src/**/*.py"), *ROOT.glob("shared/src/**/*.py")])


def test_no_command_writes_a_file_around_the_guarded_writer() -> None:
    found = []
    for path in _code_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative not in ALLOWED:
            found += bypassing_writes(path.read_text(), relative)
    assert not found, "writes that bypass iclr25.shared.files (use its writers):\n" + "\n".join(found)


def test_every_allowed_file_exists() -> None:
    assert all((ROOT / p).is_file() for p in ALLOWED)


@pytest.mark.parametrize(
    "code",
    [
        "Path(out).write_text(text)",
        "(out / 'rows.jsonl').open('a')",
        "open(path, 'wb')",
        "open(path, mode='w', encoding='utf-8')",
        "np.savez(path, x=x)",
        "torch.save(state, path)",
        "json.dump(data, f)",
        "fig.savefig(path)",
        "df.to_pickle(path)",
        "shutil.rmtree(folder)",
        "os.replace(tmp, out)",
        "lmdb.open(str(path), map_size=1 << 30)",
        "df.to_csv(path)",
        "def f(a, path):\n    claim_path(a)\n\ndef g(path):\n    lmdb.open(str(path), map_size=1)",
        "write_with(path, lambda f: f.write(b'x')); np.save(other, x)",
    ],
)
def test_the_scan_finds_a_bypassing_write(code: str) -> None:
    assert bypassing_writes(code), code


@pytest.mark.parametrize(
    "code",
    [
        "write_text(path, text)",
        "write_with(path, lambda f: np.savez(f, x=x))",
        "save_figure(fig, folder / 'a.png')",
        "open(path)",
        "open(path, 'rb')",
        "Path(p).open(encoding='utf-8')",
        "lmdb.open(str(path), readonly=True, lock=False)",
        "text.replace('a', 'b')",
        "df.to_json(orient='split')",
        "def f(path):\n    path = claim_path(path)\n    lmdb.open(str(path), map_size=1)",
    ],
)
def test_the_scan_passes_reads_and_guarded_writes(code: str) -> None:
    assert not bypassing_writes(code), code
