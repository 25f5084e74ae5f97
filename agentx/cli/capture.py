"""`agentx capture`: mitmproxy in front of a coding agent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agentx.cli.app import Force, app, err, fail
from agentx.cli.declared import declared_command, typer_option
from agentx.core.errors import AgentxError, CaptureError
from agentx.core.options import Panel, flag
from agentx.core.outputs import output_flag


@app.command()
@declared_command()
def capture(
    out_path: Annotated[
        Path | None,
        typer_option(output_flag("trace file to write (Parquet)", metavar="FILE")),
    ] = None,
    command: Annotated[
        list[str] | None,
        typer.Argument(metavar="CMD", help="after --: the agent to launch", show_default=False),
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            metavar="URL|NAME",
            rich_help_panel=Panel.PROXY,
            help="reverse mode: anthropic, openai, gemini or a URL [default: anthropic]",
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            metavar="N",
            rich_help_panel=Panel.PROXY,
            help="listen port [default: 8780; a free one with a command]",
        ),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            metavar="reverse|forward",
            rich_help_panel=Panel.PROXY,
            help="reverse (agent talks plain HTTP to agentx) or forward (HTTPS proxy + agentx CA)",
        ),
    ] = "reverse",
    listen_host: Annotated[
        str,
        typer_option(
            flag(
                "--host",
                hidden=("--listen-host",),  # its old name; serve-sim's is --host too
                metavar="HOST",
                panel=Panel.PROXY,
                help="address to listen on",
            )
        ),
    ] = "127.0.0.1",
    keep_non_model: Annotated[
        bool,
        typer.Option(
            "--keep-non-model/--drop-non-model",
            rich_help_panel=Panel.RECORDING,
            help="keep count_tokens, model lists, telemetry as flagged rows",
        ),
    ] = True,
    identity: Annotated[
        bool,
        typer.Option(
            "--identity/--no-identity",
            rich_help_panel=Panel.PROXY,
            help="ask upstreams for uncompressed responses",
        ),
    ] = True,
    status: Annotated[
        bool | None,
        typer.Option(
            "--status/--no-status",
            rich_help_panel=Panel.OUTPUT,
            help="live status line [default: on a terminal]",
            show_default=False,
        ),
    ] = None,
    confdir: Annotated[
        Path | None,
        typer.Option(
            "--confdir",
            metavar="DIR",
            rich_help_panel=Panel.PROXY,
            help="agentx's mitmproxy dir (CA) [default: ~/.config/agentx/mitmproxy]",
        ),
    ] = None,
    upstream_insecure: Annotated[
        bool,
        typer.Option(
            "--upstream-insecure",
            rich_help_panel=Panel.PROXY,
            help="do not verify the upstream's TLS certificate",
        ),
    ] = False,
    end_leftovers: Annotated[
        bool,
        typer.Option(
            "--end-leftovers",
            rich_help_panel=Panel.RECORDING,
            help="end the processes the agent left running when it exited (else: named)",
        ),
    ] = False,
    print_addon_path: Annotated[
        bool,
        typer.Option(
            "--print-addon-path",
            rich_help_panel=Panel.OUTPUT,
            help="print the file for `mitmdump -s` and exit",
        ),
    ] = False,
    force: Force = False,
) -> None:
    """mitmproxy in front of a coding agent; writes a trace. `agentx capture -o t.parquet -- claude`"""
    from agentx.capture import ADDON_PATH

    if print_addon_path:
        sys.stdout.write(f"{ADDON_PATH}\n")
        return
    from agentx.capture.runner import CaptureConfig, run_capture
    from agentx.capture.runner.config import capture_mode
    from agentx.core.errors import UsageError

    try:
        if out_path is None:
            raise UsageError("capture needs -o/--output TRACE")
        result = run_capture(
            CaptureConfig(
                out=out_path,
                mode=capture_mode(mode),
                upstream=upstream,
                port=port,
                listen_host=listen_host,
                command=tuple(command or ()),
                keep_non_model=keep_non_model,
                identity=identity,
                confdir=confdir,
                upstream_insecure=upstream_insecure,
                status=status,
                force=force,
                end_leftovers=end_leftovers,
            ),
            console=err,
        )
    except AgentxError as exc:
        fail(exc)
    if result.write_failure is not None:
        fail(CaptureError(result.write_failure))
    if result.exit_code:
        raise typer.Exit(result.exit_code)
