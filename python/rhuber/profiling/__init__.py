"""Brick profiling of the engines (docs/profiling.md): ``rhuber.profile()``."""

from ._session import BrickRow, CriticalPath, Graph, Profile, Report, profile

__all__ = ["BrickRow", "CriticalPath", "Graph", "Profile", "Report", "profile"]
