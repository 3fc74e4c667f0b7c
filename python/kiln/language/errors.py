"""The user-facing errors of kernel compilation.

``SemanticError`` is what the language and the semantic layer raise for a mistake in a
kernel's body; the code generator turns it into a ``CompilationError`` at the user's
file:line:col. Both live here, in the bottom floor, so that the language, the compiler and
the interpreter raise them without importing one another. ``CompilationWarning`` is the
lowering's warning at a user's line, formatted the same way.
"""

from __future__ import annotations

from typing import List, Optional, Tuple


class _SourceDiagnostic:
    """A diagnostic at the user's file:line:col with the offending line. ``notes`` lists
    the call sites for one inside inlined ``@kiln.jit`` callees (outermost first)."""

    severity = "error"

    def __init__(self, filename: str, lineno: int, col: int, message: str,
                 source_line: Optional[str] = None,
                 notes: Optional[List[Tuple[str, int, int, Optional[str]]]] = None):
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.message = message
        self.source_line = source_line
        self.notes = list(notes or [])
        super().__init__(self._format())

    @staticmethod
    def _snippet(line: Optional[str], col: int) -> str:
        if line is None:
            return ""
        stripped = line.rstrip("\n")
        return f"\n    {stripped}\n    {' ' * max(col - 1, 0)}^"

    def _format(self) -> str:
        text = f"{self.filename}:{self.lineno}:{self.col}: {self.severity}: {self.message}"
        text += self._snippet(self.source_line, self.col)
        for filename, lineno, col, line in reversed(self.notes):
            text += f"\n{filename}:{lineno}:{col}: note: called from here"
            text += self._snippet(line, col)
        return text

    def __reduce__(self):
        return (type(self), (self.filename, self.lineno, self.col, self.message,
                             self.source_line, self.notes))


class CompilationError(_SourceDiagnostic, Exception):
    """A mistake in a kernel's source, reported at the user's file:line:col with
    the offending line. ``notes`` lists the call sites for errors inside
    inlined ``@kiln.jit`` callees (outermost first)."""


class CompilationWarning(_SourceDiagnostic, UserWarning):
    """What the compiler did not do as a kernel asked (a load of a ``num_stages`` loop left
    synchronous, and why), issued with ``warnings.warn`` at the user's file:line:col,
    formatted as a CompilationError."""

    severity = "warning"


class SemanticError(Exception):
    """A user mistake found while giving meaning to the kernel; the code
    generator turns it into a CompilationError at the current node."""
