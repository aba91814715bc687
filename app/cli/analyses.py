"""`calmon whatif`, `calmon compare`, `calmon advice`: the analyses, read from a running
service when a URL is given or set (``--url``/``CALMON_URL``), else from the database
`calmon serve` uses (run where it runs, as `calmon token` is)."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from app.cli.commands import add_command
from app.cli.connection import add_client_arguments, given_url, open_client
from app.cli.database import read_only
from app.cli.output import print_json
from app.cli.reads import period_arguments
from app.client.service_reads import Period
from app.errors import PayloadValidationError
from app.settings import Settings

LOCAL_MODE = "; without a URL (--url or CALMON_URL) it reads the database `calmon serve` uses"


def _trajectory_point(text: str) -> tuple[float, float]:
    try:
        t, pi = text.split(":")
        return float(t), float(pi)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a trajectory point is T:PI, got {text!r}") from None


def _what_if_request(args: argparse.Namespace) -> Any:
    from app.schemas.analyses import RangeIn, TrajectoryIn, WhatIfRequest  # noqa: PLC0415

    try:
        return WhatIfRequest(
            segment=args.segment,
            start=args.start,
            end=args.end,
            priors=args.pi or [],
            range=RangeIn(
                pi_lo=args.range[0] if args.range else None,
                pi_hi=args.range[1] if args.range else None,
            ),
            trajectory=(
                TrajectoryIn(points=args.trajectory, interpolation=args.interpolation)
                if args.trajectory
                else None
            ),
            intervals=not args.no_intervals,
            replicates=args.replicates,
        )
    except ValidationError as exc:
        raise PayloadValidationError(str(exc)) from exc


def _cmd_whatif(args: argparse.Namespace, settings: Settings) -> int:
    request = _what_if_request(args)
    if given_url(args):
        with open_client(args, settings) as client:
            print_json(client.what_if(args.model, request.model_dump(mode="json", by_alias=True)))
        return 0
    from app.services.whatif import what_if  # noqa: PLC0415

    print_json(read_only(settings, "whatif", lambda session: what_if(session, args.model, request)))
    return 0


def add_whatif(subparsers: Any) -> None:
    """Register `calmon whatif`."""
    parser = add_command(
        subparsers,
        "whatif",
        _cmd_whatif,
        help="a model's metrics at other fraud rates, over a range, along a trajectory",
        description="The period's mature windows pooled, re-expressed at other fraud rates, "
        f"as JSON{LOCAL_MODE}.",
    )
    parser.add_argument("model")
    period_arguments(parser)
    parser.add_argument(
        "--pi", type=float, action="append", help="a fraud rate (repeatable; default: pi0, now)"
    )
    parser.add_argument(
        "--range",
        nargs=2,
        type=float,
        metavar=("PI_LO", "PI_HI"),
        help="uncertain range (default: the history's mean +- 3 std)",
    )
    parser.add_argument(
        "--trajectory",
        nargs="+",
        type=_trajectory_point,
        metavar="T:PI",
        help="fraud-rate trajectory points, e.g. 0:0.004 30:0.008",
    )
    parser.add_argument("--interpolation", choices=("linear", "log"), default="linear")
    parser.add_argument("--no-intervals", action="store_true", help="skip the bootstrap")
    parser.add_argument("--replicates", type=int, default=1000)
    add_client_arguments(parser)


def _compare(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """The comparison as the API answers it, over HTTP or from the database."""
    if given_url(args):
        with open_client(args, settings) as client:
            period = Period(args.segment, args.start, args.end)
            return client.compare(
                args.champion,
                args.challenger,
                metric=args.metric,
                period=period,
                replicates=args.replicates,
            )
    from app.services.compare import compare  # noqa: PLC0415

    result = read_only(
        settings,
        "compare",
        lambda session: compare(
            session,
            args.champion,
            args.challenger,
            segment=args.segment,
            start=args.start,
            end=args.end,
            metric=args.metric,
            replicates=args.replicates,
        ),
    )
    return result.model_dump(mode="json", by_alias=True)


def _cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    result = _compare(args, settings)
    if args.json:
        print_json(result)
    else:
        print(result["summary"])
    return 0


def add_compare(subparsers: Any) -> None:
    """Register `calmon compare`."""
    parser = add_command(
        subparsers,
        "compare",
        _cmd_compare,
        help="champion vs challenger: who has the higher AP, at which fraud rates",
        description=f"The champion against a challenger over the same period{LOCAL_MODE}.",
    )
    parser.add_argument("champion")
    parser.add_argument("challenger")
    period_arguments(parser)
    parser.add_argument("--metric", default="average_precision", help="series metric")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="the whole comparison as JSON")
    add_client_arguments(parser)


def _advice(args: argparse.Namespace, settings: Settings) -> Any:
    """The advice as ``ThresholdAdviceOut`` (its summary lines are the service's rule)."""
    from app.schemas.advice import ThresholdAdviceOut  # noqa: PLC0415
    from app.services.threshold_advice import threshold_advice  # noqa: PLC0415

    if given_url(args):
        with open_client(args, settings) as client:
            answer = client.threshold_advice(args.model, segment=args.segment)
        return ThresholdAdviceOut.model_validate(answer)
    return read_only(
        settings, "advice", lambda session: threshold_advice(session, args.model, args.segment)
    )


def _cmd_advice(args: argparse.Namespace, settings: Settings) -> int:
    from app.services.threshold_advice import summary  # noqa: PLC0415

    result = _advice(args, settings)
    if args.json:
        print_json(result)
    else:
        print("\n".join(summary(result)))
    return 0


def add_advice(subparsers: Any) -> None:
    """Register `calmon advice`."""
    parser = add_command(
        subparsers,
        "advice",
        _cmd_advice,
        help="which threshold to set now: within the alert budget, restoring precision",
        description=f"Which threshold to set now{LOCAL_MODE}.",
    )
    parser.add_argument("model")
    parser.add_argument("--segment", default="all", help="segment ('all': the whole window)")
    parser.add_argument("--json", action="store_true", help="the whole advice as JSON")
    add_client_arguments(parser)
