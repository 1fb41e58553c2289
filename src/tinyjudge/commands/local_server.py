"""``tinyjudge local-server``: the local judge's llama.cpp server, kept running for notebooks."""

from __future__ import annotations

from pathlib import Path

import typer

from ._io import err, out

__all__ = ["command"]


def command(
    gguf: Path = typer.Option(
        None, "--gguf", help="a GGUF model (default: the packaged Qwen2.5-Coder-1.5B)"
    ),
    port: int = typer.Option(0, "--port", help="TCP port on 127.0.0.1 (0: a free one)"),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: all usable)"),
    n_ctx: int = typer.Option(4096, "--n-ctx", help="context window in tokens"),
) -> None:
    """Run the local judge's model behind an OpenAI-compatible server until Ctrl-C."""
    from tinyjudge.judge.local import LOCAL_DEFAULTS, LlamaServer, default_gguf, model_name

    name = model_name(gguf)
    server = LlamaServer(
        gguf or default_gguf(), port=port, threads=threads, n_ctx=n_ctx, model=name
    )
    err.print(f"starting {name} ({server.threads} threads)...")
    with server as base_url:
        out.print(f"serving {name} at {base_url} (Ctrl-C stops it)", soft_wrap=True)
        defaults = ", ".join(f"{k}={v!r}" for k, v in LOCAL_DEFAULTS.items())
        out.print(
            f'run_judge(items, "compliance", model="{name}", base_url="{base_url}", {defaults})',
            soft_wrap=True,
        )
        try:
            assert server.proc is not None
            code = server.proc.wait()
        except KeyboardInterrupt:
            err.print("stopping the server")
            return
    if code:
        err.print(f"the server exited with code {code}")
        raise typer.Exit(1)
