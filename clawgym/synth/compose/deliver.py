"""The registry of a composed pipeline's deliverables: the files the person asked for, the reference
solution's lines that write them, and the checks their expected contents imply. They live by kind:
the rows written to one file in row_files.py, summaries in summaries.py, files laid out in folders
in folders.py, the reconciliation in reconcile.py and the message that may follow in message.py.

Each `Deliver` gets the final pipeline state, draws what it needs from the seed (`plan`, None where
it does not fit), and returns a `Delivered`: the checks (a gate that the file exists, then its
exact contents: rows, fields, lines or files), the solution lines and the words for its phrasing.
"""

from __future__ import annotations

from .delivered import Deliver
from .folders import Organise, SplitByGroup
from .message import DraftEmail
from .reconcile import Reconcile
from .row_files import MarkdownOut, WriteJson, WriteRows
from .summaries import GroupAggregate, GroupJson, Pivot, ReportMd, ShareOfTotal, TotalsJson


DELIVERABLES: dict[str, Deliver] = {
    d.name: d
    for d in (
        WriteRows(),
        WriteJson(),
        MarkdownOut(),
        GroupAggregate(),
        GroupJson(),
        ShareOfTotal(),
        Pivot(),
        TotalsJson(),
        ReportMd(),
        SplitByGroup(),
        Reconcile(),
        Organise(),
    )
}
MESSAGE = DraftEmail()
