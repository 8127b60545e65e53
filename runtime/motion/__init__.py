"""Motion as data: the clip a take starts from, the take it ends as, and what is measured on them.

The layer map: docs/architecture.md."""
