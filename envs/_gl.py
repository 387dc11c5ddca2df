"""The OpenGL platform MuJoCo renders with, chosen before MuJoCo is imported.

MuJoCo picks its platform from ``MUJOCO_GL`` once, when ``mujoco`` is first imported, and
defaults to GLFW, which needs a display. Without one, rendering raised
``mujoco.FatalError`` and a second attempt in the same process aborted the interpreter. So on a
machine with no display and no ``MUJOCO_GL``, :func:`choose_platform` sets ``MUJOCO_GL`` to the
first headless platform whose library is installed: EGL, then OSMesa (as ``bam-rl record``
does). A choice the user made (``MUJOCO_GL`` set, or a display) is never changed.

Importing MuJoCo loads the chosen platform too, and fails when ``MUJOCO_GL`` is not one MuJoCo
knows (``MUJOCO_GL=garbage``) or names a library that is missing (``osmesa`` without OSMesa).
The simulation needs no OpenGL, so :func:`preload_mujoco` then imports MuJoCo with rendering
disabled (``MUJOCO_GL`` is restored at once) and returns the message that rendering raises.
"""

from __future__ import annotations

import ctypes.util
import os
import sys

__all__ = [
    "HEADLESS_PLATFORMS",
    "choose_platform",
    "platform_advice",
    "preload_mujoco",
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


def _platform_problem(chosen: str) -> str | None:
    """Why MuJoCo's import would fail to load ``MUJOCO_GL=chosen`` (``None``: it should not)."""
    value = chosen.lower().strip()
    accepted = ["", "disable", "disabled", "off", "false", "0"]
    accepted += ["enable", "enabled", "on", "true", "1", "glfw"]
    if sys.platform.startswith("linux"):
        accepted += ["glx", "egl", "osmesa"]
    elif sys.platform == "win32":
        accepted += ["wgl"]
    elif sys.platform == "darwin":
        accepted += ["cgl"]
    if value not in accepted:
        names = ", ".join(name for name in accepted[11:])
        return f"MUJOCO_GL={chosen!r} is not a platform MuJoCo knows ({names})"
    for platform, library in HEADLESS_PLATFORMS:
        if value == platform and not ctypes.util.find_library(library):
            return f"MUJOCO_GL={chosen!r} needs the {library} library, which is not installed"
    return None


def preload_mujoco() -> str | None:
    """Imports ``mujoco`` so that a bad OpenGL platform cannot stop the simulation.

    Returns ``None`` when MuJoCo loaded its platform, else the message that rendering raises
    (:func:`platform_advice`): MuJoCo was then imported with rendering disabled, and
    ``MUJOCO_GL`` restored to the user's value.
    """
    if "mujoco" in sys.modules:  # imported already: its platform loaded
        return None
    chosen = os.environ.get("MUJOCO_GL")
    problem = _platform_problem(chosen or "")
    if problem is None:
        try:
            import mujoco
        except Exception as error:  # the platform's library failed to load
            problem = f"MUJOCO_GL={chosen!r}: {type(error).__name__}: {error}"
        else:
            return None
    os.environ["MUJOCO_GL"] = "disable"
    try:
        import mujoco  # noqa: F401
    finally:
        if chosen is None:
            del os.environ["MUJOCO_GL"]
        else:
            os.environ["MUJOCO_GL"] = chosen
    return platform_advice(problem)


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
