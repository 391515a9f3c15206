"""An example service for cronctl: see ``reports.py`` and ``tasks.py``."""
