"""incidents: failures of automation steps become incident bundles, driven up an escalation ladder.

This module stays import-light: the capture path imports it on every failing script.
"""

__version__ = "0.1.0"
