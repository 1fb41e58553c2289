"""The ``tinyjudge`` command line: a thin typer layer over the library.

A user's mistake (bad file, bad record, unknown name) prints one line and exits
2; only a bug in tinyjudge shows a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from tinyjudge.errors import TinyjudgeError

__all__ = ["app", "main"]

app = typer.Typer(
    name="tinyjudge",
    help="Judge agent trajectories with an LLM, distill the judge into a small reward model, "
    "calibrate it against people, and audit how far to trust both.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def fail(message: str) -> None:
    """Print one error line and exit 2."""
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(2)


def _not_built(verb: str, issue: str) -> None:
    fail(f"`tinyjudge {verb}` is not built yet ({issue}); see the README for what works today")


@app.command("import")
def import_cmd(
    name: str = typer.Argument(..., help="dataset: xstest, in3, llmbar, pandalm, ..."),
    src: Path = typer.Argument(..., help="folder laid out like the original release"),
    out_dir: Path = typer.Option(..., "--out", help="writes OUT/items.jsonl and OUT/labels.jsonl"),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad rows and go on"),
) -> None:
    """Import a public labelled set into items.jsonl and labels.jsonl.

    Without --skip-bad the import stops at the first bad record, exits 2 and
    keeps what it read before it; with --skip-bad it reports each bad record
    and imports the rest.
    """
    from tinyjudge.datasets.importers import ImportStopped, run_import
    from tinyjudge.datasets.jsonl import write_jsonl

    if out_dir.exists() and not out_dir.is_dir():
        raise TinyjudgeError(f"--out {out_dir} is a file; give a folder to write into")
    items_path, labels_path = out_dir / "items.jsonl", out_dir / "labels.jsonl"
    try:
        result = run_import(name, src, skip_bad=skip_bad)
    except ImportStopped as stop:
        n_items = write_jsonl(items_path, stop.kept.items)
        n_labels = write_jsonl(labels_path, stop.kept.labels)
        fail(
            f"{stop}; kept the {n_items} items and {n_labels} labels read before it in "
            f"{items_path} and {labels_path}; fix that record, or rerun with --skip-bad "
            "to import the rest"
        )
        return
    n_items = write_jsonl(items_path, result.items)
    n_labels = write_jsonl(labels_path, result.labels)
    out.print(f"{name}: {n_items} items, {n_labels} labels -> {out_dir}", markup=False)
    for source, n in result.sources().items():
        unscored = sum(1 for lab in result.labels if lab.source == source and lab.status != "ok")
        extra = f" ({unscored} unscored)" if unscored else ""
        out.print(f"  {source:<32} {n:>6}{extra}", markup=False)
    for bad in result.bad:
        err.print(f"skipped: {bad}", markup=False, soft_wrap=True)
    if result.bad:
        err.print(f"{len(result.bad)} bad records skipped (listed above)", markup=False)


@app.command()
def judge(
    items: Path = typer.Argument(..., help="items JSONL"),
    rubric: str = typer.Option(..., "--rubric", help="built-in rubric name or YAML path"),
    out_path: Path = typer.Option(..., "--out", help="labels JSONL, written atomically"),
    model: str = typer.Option(None, "--model", help="model name at the endpoint"),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible URL (.../v1)"),
    samples: int = typer.Option(1, "--samples", help="completions per item (self-consistency)"),
    temperature: float = typer.Option(0.0, "--temperature"),
    concurrency: int = typer.Option(8, "--concurrency", help="items in flight at once"),
    max_retries: int = typer.Option(4, "--max-retries"),
    timeout: float = typer.Option(60.0, "--timeout", help="seconds per HTTP request"),
    cache: Path = typer.Option(None, "--cache", help="SQLite cache (default: OUT.cache.sqlite)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="no cache, no resume"),
    replay: Path = typer.Option(None, "--replay", help="answer from recorded labels (no key)"),
    replay_source: str = typer.Option("judge:gpt-4", "--replay-source"),
    price_in: float = typer.Option(None, "--price-in", help="USD per 1M input tokens"),
    price_out: float = typer.Option(None, "--price-out", help="USD per 1M output tokens"),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="env var of the key"),
    summary: Path = typer.Option(None, "--summary", help="also write the run summary as JSON"),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Judge items with an LLM over any OpenAI-compatible endpoint."""
    from tinyjudge.judge._cli import judge_command

    judge_command(
        items,
        rubric=rubric,
        out=out_path,
        model=model,
        base_url=base_url,
        samples=samples,
        temperature=temperature,
        concurrency=concurrency,
        max_retries=max_retries,
        timeout=timeout,
        cache=cache,
        no_cache=no_cache,
        replay=replay,
        replay_source=replay_source,
        price_in=price_in,
        price_out=price_out,
        api_key_env=api_key_env,
        summary_path=summary,
        progress=progress,
        console=out,
        err=err,
    )


@app.command()
def distill(
    items: Path = typer.Argument(..., help="items.jsonl"),
    labels: Path = typer.Argument(..., help="labels.jsonl (any sources; --source picks one)"),
    source: str = typer.Option(..., "--source", help="the teacher, e.g. judge:gpt-4"),
    rubric: str = typer.Option(..., "--rubric", help="rubric name or .yaml path"),
    tier: str = typer.Option("linear", "--tier", help="linear | probe | encoder"),
    group_by: str = typer.Option(None, "--group-by", help="split key, e.g. metadata.prompt_id"),
    val_fraction: float = typer.Option(0.2, "--val-fraction", help="share held out"),
    name: str = typer.Option(None, "--name", help="model name (labels get rm:<name>)"),
    param: list[str] = typer.Option([], "--param", help="tier option KEY=VALUE, repeatable"),
    out_dir: Path = typer.Option(..., "--out", help="model directory to write"),
) -> None:
    """Distill a source's labels into a small reward model."""
    import logging

    from rich.logging import RichHandler

    from tinyjudge.datasets.jsonl import read_items, read_labels
    from tinyjudge.distill import distill as run_distill
    from tinyjudge.distill import parse_params

    # Training progress (epochs, loss) is logged by the encoder tier; show it live.
    progress_log = logging.getLogger("tinyjudge.distill")
    progress_log.setLevel(logging.INFO)
    progress_log.addHandler(RichHandler(console=err, show_path=False, show_time=False))
    with err.status(f"distilling {source} into a {tier} model..."):
        result = run_distill(
            read_items(items),
            read_labels(labels),
            source,
            rubric,
            tier=tier,
            group_by=group_by,
            val_fraction=val_fraction,
            name=name,
            **parse_params(param),
        )
        result.model.save(out_dir)
    v = result.validation
    out.print(
        f"{result.model.name} ({tier}): trained on {result.n_train}, validated on {result.n_val}"
        f" ({result.n_unscored} unscored labels left out) -> {out_dir}"
    )
    out.print(
        f"  agreement with {source}: accuracy {v['accuracy']:.3f}, "
        f"Cohen's kappa {v['cohen_kappa']:.3f}"
    )


@app.command()
def score(
    model_dir: Path = typer.Argument(..., help="a model directory from `tinyjudge distill`"),
    items: Path = typer.Argument(..., help="items.jsonl"),
    out_path: Path = typer.Option(..., "--out", help="labels.jsonl to write"),
    batch_size: int = typer.Option(64, "--batch-size", min=1),
    raw: bool = typer.Option(False, "--uncalibrated", help="ignore calibration.json"),
    ray: str = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="score on Ray: 'local' starts one, 'auto' or "
        "HOST:PORT joins a cluster (needs the ray extra)",
    ),
    actors: int = typer.Option(2, "--actors", min=1, help="Ray actors (one model each)"),
) -> None:
    """Score items with a distilled reward model."""
    from rich.progress import Progress

    from tinyjudge.datasets.jsonl import count_lines
    from tinyjudge.distill import load_model, score_file

    if ray is not None:
        from tinyjudge.scale import score_file_on_ray

        n = score_file_on_ray(
            items,
            model_dir,
            out_path,
            address=ray,
            actors=actors,
            batch_size=batch_size,
            calibrated=not raw,
        )
        out.print(f"{n} labels scored on Ray ({ray}) -> {out_path}")
        return
    model = load_model(model_dir, calibrated=not raw)
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task(f"scoring with {model.name}", total=count_lines(items))
        n = score_file(model, items, out_path, batch_size, lambda k: bar.advance(task, k))
    out.print(f"{n} labels (source {model.source}) -> {out_path}")


@app.command()
def export(
    model_dir: Path = typer.Argument(..., help="an encoder-tier model directory"),
    onnx: bool = typer.Option(False, "--onnx", help="write MODEL_DIR/model.onnx"),
    int8: bool = typer.Option(False, "--int8", help="also write a dynamic-int8 model_int8.onnx"),
) -> None:
    """Export an encoder-tier reward model (ONNX, checked against torch)."""
    from tinyjudge.distill import export_onnx

    if not onnx:
        fail("choose a format: --onnx")
    report = export_onnx(model_dir, int8=int8)
    out.print(
        f"{report.path}: max |logit difference| vs torch {report.max_abs_diff:.2e} "
        f"on {report.n_checked} items",
        soft_wrap=True,
    )
    if report.int8_path is not None:
        out.print(
            f"{report.int8_path}: dynamic int8, max |logit difference| "
            f"{report.int8_max_abs_diff:.2e}",
            soft_wrap=True,
        )


@app.command()
def calibrate(
    paths: list[Path] = typer.Argument(
        ..., help="MODEL_DIR ITEMS LABELS... (or LABELS... with --source)"
    ),
    human: str = typer.Option(..., "--human", help="the human source, e.g. human:final"),
    method: str = typer.Option(
        "temperature", "--method", help="temperature, vector, platt or isotonic"
    ),
    out_dir: Path = typer.Option(
        None, "--out", help="model dir to write (default: in place); with --source, a folder"
    ),
    source: str = typer.Option(
        None, "--source", help="calibrate this label source's probs (e.g. judge:gpt-4)"
    ),
    items: Path = typer.Option(None, "--items", help="items JSONL, for --group-by with --source"),
    group_by: str = typer.Option(
        None, "--group-by", help="cross-fitting never splits this item key, e.g. metadata.prompt_id"
    ),
    n_splits: int = typer.Option(5, "--folds", help="cross-fitting folds"),
    n_boot: int = typer.Option(1000, "--n-boot", help="bootstrap resamples per interval"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Calibrate a reward model's probabilities against human labels."""
    from tinyjudge.calibrate._cli import calibrate_command

    calibrate_command(
        paths, human=human, method=method, out_dir=out_dir, source=source, items=items,
        group_by=group_by, n_splits=n_splits, n_boot=n_boot, seed=seed, console=out,
    )  # fmt: skip


@app.command()
def audit(
    labels: list[Path] = typer.Argument(..., help="labels JSONL file(s), any sources"),
    items: Path = typer.Option(None, "--items", help="items JSONL (for --group-by/--slice-by)"),
    reference: str = typer.Option(..., "--reference", help="the source taken as truth"),
    group_by: str = typer.Option(
        None, "--group-by", help="cluster the CIs by this item key, e.g. metadata.prompt_id"
    ),
    slice_by: list[str] = typer.Option(
        [], "--slice-by", help="break agreement down by this item key (repeatable)"
    ),
    report: Path = typer.Option(None, "--report", help="write the HTML report here"),
    json_out: Path = typer.Option(None, "--json", help="write the figures as JSON here"),
    rubric: str = typer.Option(None, "--rubric", help="only labels under this rubric id"),
    order: str = typer.Option(
        None, "--order", help="label scale, comma-separated: adds weighted kappa, ordinal alpha"
    ),
    n_boot: int = typer.Option(1000, "--n-boot", help="bootstrap resamples per interval"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
) -> None:
    """Agreement, bias probes and an HTML report for any label sources."""
    from tinyjudge.audit._report_cli import audit_command

    audit_command(
        labels, items=items, reference=reference, group_by=group_by, slice_by=slice_by,
        report=report, json_out=json_out, rubric=rubric, order=order, n_boot=n_boot,
        seed=seed, console=out,
    )  # fmt: skip


@app.command()
def estimate(
    labels: list[Path] = typer.Argument(..., help="labels JSONL file(s), any sources"),
    items: Path = typer.Option(None, "--items", help="items JSONL (needed for --by)"),
    cheap: str = typer.Option(..., "--cheap", help="the cheap source, e.g. judge:gpt-4"),
    human: str = typer.Option(..., "--human", help="the human source, e.g. human:final"),
    rubric: str = typer.Option(None, "--rubric", help="its `positive` labels are the behaviour"),
    by: str = typer.Option(None, "--by", help="group key, e.g. metadata.answering_model"),
    compare: tuple[str, str] | None = typer.Option(None, "--compare", help="groups A B"),
    level: float = typer.Option(0.9, "--level", help="coverage of the intervals"),
    method: str = typer.Option("ppi++", "--method", help="ppi++ | ppi | stratified"),
    human_fraction: float = typer.Option(None, "--human-fraction", help="keep this share"),
    seed: int = typer.Option(0, "--seed", help="seed of --human-fraction's draw"),
    json_out: Path = typer.Option(None, "--json", help="also write the figures as JSON"),
) -> None:
    """Estimate behaviour rates from cheap labels plus a few human ones (PPI)."""
    from tinyjudge.audit.estimate._cli import estimate_command

    estimate_command(
        labels,
        items=items,
        cheap=cheap,
        human=human,
        rubric=rubric,
        by=by,
        compare=compare,
        level=level,
        method=method,
        human_fraction=human_fraction,
        seed=seed,
        json_out=json_out,
        console=out,
    )


@app.command()
def serve(
    model_dir: Path = typer.Argument(..., help="a model directory from `tinyjudge distill`"),
    host: str = typer.Option("127.0.0.1", help="bind address; anything but loopback needs --token"),
    port: int = typer.Option(8000, help="TCP port"),
    token: str = typer.Option(None, envvar="TINYJUDGE_TOKEN", help="bearer token to require"),
    max_batch: int = typer.Option(64, help="most items per forward pass (1 turns batching off)"),
    max_wait_ms: float = typer.Option(5.0, help="how long a forward pass waits for more items"),
    max_body_mb: float = typer.Option(8.0, help="larger requests are refused with 413"),
) -> None:
    """Serve a reward model over HTTP for RL loops (POST /score, /get_reward)."""
    # PyTorch's idle OpenMP threads sleep instead of spinning, leaving the cores to the
    # HTTP work between batches. Set before any OpenMP runtime loads (scikit-learn's
    # comes with the model code); the user's own setting wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from tinyjudge.distill import load_model
    from tinyjudge.serve import run_server

    if max_batch < 1:
        fail(f"--max-batch must be at least 1, got {max_batch}")
    model = load_model(model_dir)
    out.print(f"serving {model.name} on http://{host}:{port} (POST /score, /get_reward)")
    run_server(model, host, port, token, max_batch, max_wait_ms, int(max_body_mb * (1 << 20)))


@app.command()
def hints(
    labels: Path = typer.Argument(..., help="labels.jsonl whose labels carry hints"),
    out_path: Path = typer.Option(..., "--out", help="writes {item_id, step, hint} per line"),
    source: str = typer.Option(None, help="only this label source, e.g. judge:gpt-4o"),
    rubric: str = typer.Option(None, help="only labels under this rubric"),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad lines and go on"),
) -> None:
    """Export step-level hints as JSONL textual feedback for RL."""
    from tinyjudge.hints import export_hints

    result = export_hints(labels, out_path, source=source, rubric=rubric, skip_bad=skip_bad)
    out.print(
        f"{result.written} hints from {result.labels} labels -> {out_path} "
        f"({result.without_hint} without a hint, {result.unscored} unscored)",
        markup=False,
        soft_wrap=True,
    )
    for bad in result.bad:
        err.print(f"skipped: {bad}", markup=False, soft_wrap=True)


@app.command()
def label(
    items: Path = typer.Argument(..., help="items.jsonl to label"),
    rubric: str = typer.Option(..., "--rubric", help="built-in rubric name or a .yaml path"),
    labels: Path = typer.Option(..., "--labels", help="labels.jsonl: read, and answers added"),
    reviewer: str = typer.Option(..., "--as", help="your name: labels get source human:NAME"),
    host: str = typer.Option("127.0.0.1", help="bind address; anything but loopback needs --token"),
    port: int = typer.Option(8765, help="TCP port (0: any free port)"),
    select: str = typer.Option(
        None, help="active|random|sequential (default: active when --cheap exists, else random)"
    ),
    budget: int = typer.Option(None, help="stop after this many labels"),
    cheap: str = typer.Option(
        None, help="judge:/rm: source for active selection (default: the first with scores)"
    ),
    token: str = typer.Option(
        None, envvar="TINYJUDGE_LABEL_TOKEN", help="token to require (needed off loopback)"
    ),
) -> None:
    """Label items in the browser; each answer is saved at once as human:NAME."""
    from tinyjudge.label import check_token, create_app, open_session, serve
    from tinyjudge.label.app import is_loopback

    check_token(host, token)
    session = open_session(items, rubric, labels, reviewer, select, budget, cheap)  # type: ignore[arg-type]
    done = len(session.my_answers())
    how = session.selector.mode + (f" on {session.cheap_source}" if session.cheap_source else "")
    out.print(f"{len(session.items)} items, {done} labelled by human:{reviewer}; order: {how}")
    app_ = create_app(session, token=token, loopback=is_loopback(host))

    def ready(url: str) -> None:
        out.print(f"open {url}  (Ctrl+C stops; every answer is already saved)")
        sys.stdout.flush()

    serve(app_, host, port, token, on_ready=ready)


@app.command()
def demo(
    data: Path = typer.Option(None, help="XSTest-shaped folder (default: the bundled sample)"),
    out_dir: Path = typer.Option(Path("runs/demo"), "--out", help="where the demo writes"),
    tier: str = typer.Option("probe", help="reward-model tier: linear, probe or encoder"),
) -> None:
    """Run the whole loop on the bundled XSTest sample."""
    from tinyjudge.demo import run_demo

    run_demo(data, out_dir, console=out, tier=tier)


def main() -> None:
    """Entry point: run the app, turning user errors into one line and exit 2."""
    try:
        rc = app(standalone_mode=False)
    except TinyjudgeError as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", markup=True, soft_wrap=True)
        sys.exit(2)
    except OSError as e:
        # A path the user gave that cannot be read or written (permissions, a
        # file where a folder is needed, a full disk): their fix, not our bug.
        where = f"{e.filename}: " if e.filename else ""
        err.print(f"[bold red]error:[/] {escape(where + (e.strerror or str(e)))}", soft_wrap=True)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err.print("interrupted; finished work is kept")
        sys.exit(130)
    except Exception as e:
        # Usage errors (missing argument, bad option). Matched by name because
        # typer >= 0.20 ships its own copy of click, not the `click` package.
        if any(c.__name__ == "ClickException" for c in type(e).__mro__):
            e.show()  # type: ignore[attr-defined]
            sys.exit(getattr(e, "exit_code", 2) or 2)
        raise
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
