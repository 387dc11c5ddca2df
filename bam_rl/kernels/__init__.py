"""Compiled (Numba) kernels for hot online loops; each is compiled lazily on first use."""
