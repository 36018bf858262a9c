"""The labelled photos: which photos wheels ship, the ImageNet classes that name each, and why.

Each photo's label is a set of ImageNet classes (0-999); any class of the set counts as correct,
because ImageNet often splits one object over several classes (a tabby cat is "tabby", "tiger
cat" or "Egyptian cat" to its annotators). Photos that show no ImageNet class are left out:
scikit-image's astronaut (a person: ImageNet has no person class), its coins, moon, retina and
textures, and its clock_motion (a motion-blurred clock no one would name). The sets were
written from what each photo shows, before any model was run on it. No pixels here: the
decoding is harness.datasets.photos'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

# Each photo gives these samples, in this order (harness.datasets.photos makes them).
VIEWS: Final = ("centre crop", "centre crop, mirrored", "full square", "full square, mirrored")


@dataclass(frozen=True, kw_only=True)
class Photo:
    """A photo a package ships, the ImageNet classes that name what it shows, and why."""

    name: str
    package: str
    member: str
    classes: Mapping[int, str]
    why: str


PHOTOS: Final[tuple[Photo, ...]] = (
    Photo(
        name="chelsea",
        package="skimage",
        member="data/chelsea.png",
        classes={281: "tabby, tabby cat", 282: "tiger cat", 285: "Egyptian cat"},
        why="a striped short-haired domestic cat; ImageNet's striped short-haired cat classes",
    ),
    Photo(
        name="coffee",
        package="skimage",
        member="data/coffee.png",
        classes={967: "espresso", 968: "cup", 504: "coffee mug"},
        why="a cup of coffee on a saucer: the drink and the two cup classes",
    ),
    Photo(
        name="rocket",
        package="skimage",
        member="data/rocket.jpg",
        classes={657: "missile", 744: "projectile, missile", 812: "space shuttle"},
        why="a rocket on its launch pad: ImageNet's rocket-shaped launch vehicles",
    ),
    Photo(
        name="motorcycle",
        package="skimage",
        member="data/motorcycle_left.png",
        classes={665: "moped", 670: "motor scooter, scooter"},
        why="a motorcycle in a garage; ImageNet has no motorcycle class, these are its "
        "motorised two-wheelers",
    ),
    Photo(
        name="cameraman",
        package="skimage",
        member="data/camera.png",
        classes={759: "reflex camera", 872: "tripod"},
        why="a man behind a camera on a tripod (grey): the camera and the tripod",
    ),
    Photo(
        name="grace_hopper",
        package="matplotlib",
        member="mpl-data/sample_data/grace_hopper.jpg",
        classes={652: "military uniform", 906: "Windsor tie"},
        why="a portrait of Rear Admiral Grace Hopper in navy uniform and tie",
    ),
)


def photo_labels() -> dict[int, frozenset[int]]:
    """Each sample's acceptable ImageNet classes, by sample index (no pixels decoded)."""
    return {
        index: frozenset(photo.classes)
        for index, photo in enumerate(p for p in PHOTOS for _ in VIEWS)
    }
