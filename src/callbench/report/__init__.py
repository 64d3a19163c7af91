"""Terminal tables and a self-contained HTML report for one or several runs."""
