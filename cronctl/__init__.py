"""cronctl: a cron scheduler you run as a service."""

__version__ = "0.1.0"
