"""Brick profiling of the engines (docs/profiling.md): ``renewable_huber.profile()``."""

from ._session import BrickRow, CriticalPath, Graph, Profile, Report, profile

__all__ = ["BrickRow", "CriticalPath", "Graph", "Profile", "Report", "profile"]
