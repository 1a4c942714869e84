"""`autotriton suite convert`: benchmark suites from one form into another.

    autotriton suite convert KernelBench/level1 --out level1.jsonl     (KernelBench's folders -> suite JSONL)
    autotriton suite convert level1.jsonl --out kb/                     (suite JSONL -> KernelBench's layout)
    autotriton suite convert TritonBench_T_v1.json --out tb.jsonl       (TritonBench-T -> suite JSONL, or a folder)

The source's form is detected as `eval --suite` detects it; the target's from `--out`: a `.jsonl`
file is a suite JSONL, anything else a folder in KernelBench's layout (`level<L>/<P>_<Name>.py`).
"""

from __future__ import annotations

from pathlib import Path

import typer

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail

suite_app = typer.Typer(help="Benchmark suites: convert between KernelBench's folders, suite JSONL and TritonBench-T.",
                        no_args_is_help=True)
app.add_typer(suite_app, name="suite")


@suite_app.command("convert")
def convert(
    source: str = typer.Argument(..., help="KernelBench's folder, a level folder or one problem .py; a suite JSONL; TritonBench-T data (statistics JSON, folder or operator file); hf:level_N with --hub"),
    out: Path = typer.Option(..., "--out", "-o", help="a .jsonl file (suite JSONL) or a new folder (KernelBench's layout: level<L>/<P>_<Name>.py)"),
    probe: bool = typer.Option(False, "--probe", help="TritonBench-T: also run every converted problem in the judge's sandbox and drop those that do not run"),
    hub: bool = typer.Option(False, "--hub", help="allow hf:level_N (KernelBench from the Hugging Face hub; online only)"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {source, out, format, converted, errors: [{record, file, line, message}], files}"),
) -> None:
    """Convert a benchmark suite; nothing is written when the source cannot be read."""
    from autotriton.evaluation import SuiteError, convert_tritonbench_t, read_entries, write_problems, write_suite_jsonl
    from autotriton.evaluation import looks_like_tritonbench

    cfg, _ = load_config_or_fail()
    path = Path(source)
    errors = []
    try:
        if path.exists() and looks_like_tritonbench(path):
            result = convert_tritonbench_t(path, probe=probe, validation_config=cfg.validation)
            entries, errors = result.entries, result.errors
            if not entries:
                fail(f"{path}: no TritonBench-T record could be converted "
                     f"({'; '.join(str(e) for e in errors[:5]) or 'no records'}).")
        else:
            entries = read_entries(source, hub=hub)
        if out.suffix == ".jsonl":
            write_suite_jsonl(entries, out)
            form, files = "jsonl", [str(out)]
        else:
            form, files = "kernelbench", [str(p) for p in write_problems(entries, out)]
    except (SuiteError, ValueError, OSError) as exc:
        fail(str(exc))
    rows = [{"record": e.record, "file": e.file, "line": e.line, "message": e.message} for e in errors]
    if json_out:
        emit_json({"source": source, "out": str(out), "format": form, "converted": len(entries), "errors": rows,
                   "files": files})
        return
    c = console()
    c.print(f"converted {len(entries)} problems from {source} into {out} "
            f"({'suite JSONL' if form == 'jsonl' else 'KernelBench layout'})", highlight=False)
    if errors:
        c.print(f"{len(errors)} records could not be converted:", highlight=False)
        for e in errors:
            c.print(f"  [yellow]{e}[/]", highlight=False)
