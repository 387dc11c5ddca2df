"""Paper experiments: each returns tidy frames, summaries and figures."""
