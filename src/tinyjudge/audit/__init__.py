"""Audit: agreement between label sources, bias probes, PPI estimates, reports."""

from __future__ import annotations

__all__: list[str] = []
