"""The OpenGL platform MuJoCo renders with, chosen before MuJoCo is imported.

MuJoCo picks its platform from ``MUJOCO_GL`` once, when ``mujoco`` is first imported, and
defaults to GLFW, which needs a display. Without one, rendering raised
``mujoco.FatalError`` and a second attempt in the same process aborted the interpreter. So on a
machine with no display and no ``MUJOCO_GL``, :func:`choose_platform` sets ``MUJOCO_GL`` to the
first headless platform whose library is installed: EGL, then OSMesa (as ``bam-rl record``
does). A choice the user made (``MUJOCO_GL`` set, or a display) is never changed.
"""

from __future__ import annotations

import ctypes.util
import os
import sys

__all__ = ["HEADLESS_PLATFORMS", "choose_platform", "platform_advice"]

#: Headless platforms in the order they are tried, with the library each needs.
HEADLESS_PLATFORMS = (("egl", "EGL"), ("osmesa", "OSMesa"))


def _has_display() -> bool:
    if sys.platform in ("darwin", "win32"):  # windows are always available there
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def choose_platform() -> str | None:
    """Sets ``MUJOCO_GL`` for a machine without a display; returns the platform MuJoCo will
    use (``None``: its own default, GLFW with a display)."""
    chosen = os.environ.get("MUJOCO_GL")
    if chosen or _has_display():
        return chosen or None
    for platform, library in HEADLESS_PLATFORMS:
        if ctypes.util.find_library(library):
            os.environ["MUJOCO_GL"] = platform
            if platform in ("egl", "osmesa"):  # PyOpenGL must load the same platform
                os.environ.setdefault("PYOPENGL_PLATFORM", platform)
            return platform
    return None


def platform_advice(error: BaseException | str) -> str:
    """The message of a rendering failure: what was tried and what to install."""
    chosen = os.environ.get("MUJOCO_GL") or "glfw (MuJoCo's default, which needs a display)"
    return (
        f"cannot render the cart-pole: MuJoCo could not use the OpenGL platform {chosen} "
        f"({error}). Without a display, install EGL (Debian/Ubuntu: libegl1) or OSMesa "
        "(libosmesa6) and set MUJOCO_GL=egl or MUJOCO_GL=osmesa before MuJoCo is first "
        "imported; with a display, check DISPLAY. Rendering is disabled for this process."
    )
