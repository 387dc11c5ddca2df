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

__all__ = [
    "HEADLESS_PLATFORMS",
    "choose_platform",
    "platform_advice",
    "window_advice",
]

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


def window_advice() -> str | None:
    """Why ``render_mode="human"`` cannot open a window here (``None``: it may).

    Checked before GLFW is touched: without a display GLFW's ``glfwGetVideoMode`` fails an
    assertion and aborts the interpreter, with no Python exception to catch. A window needs a
    display (``DISPLAY`` or ``WAYLAND_DISPLAY`` on Linux) and MuJoCo on GLFW: with
    ``MUJOCO_GL`` set to a headless platform (``egl``, ``osmesa``; :func:`choose_platform` sets
    it on a machine without a display) MuJoCo and PyOpenGL render off-screen only.
    """
    chosen = (os.environ.get("MUJOCO_GL") or "").lower()
    if not _has_display():
        why = "this machine has no display (DISPLAY and WAYLAND_DISPLAY are unset)"
    elif chosen in {platform for platform, _ in HEADLESS_PLATFORMS}:
        why = f"MUJOCO_GL={chosen} selects off-screen rendering, which has no window"
    else:
        return None
    return (
        f'render_mode="human" needs a window, but {why}. Use render_mode="rgb_array" '
        "(off-screen frames; without a display set MUJOCO_GL=egl or MUJOCO_GL=osmesa before "
        "MuJoCo is first imported), or run with a display (DISPLAY set, e.g. under xvfb-run) "
        "and MUJOCO_GL unset or glfw. Gymnasium's check_env(env, skip_render_check=True) "
        "checks the rest without a window."
    )
