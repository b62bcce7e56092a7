"""A synthetic MovieLens log in the upstream archive format, shaped like a real release.

Usage: `.venv/bin/python benchmarks/movielens_like.py --shape ml-latest-small --out DIR`
(or `--shape ml-25m`). Writes `DIR/<shape>.zip` holding `<shape>/ratings.csv` (header
`userId,movieId,rating,timestamp`, rows sorted by user then movie, half stars) and `movies.csv`,
`links.csv`, `tags.csv`, `README.txt`, and prints its sha256 and the config override that runs
the workflow on it (docs/realdata.md, "A small real data set"). The log is synthetic; what it
imitates (docs/realdata.md, "A synthetic log of a release's shape"):

- catalogue: items enter over the period (a share is there from the start, the rest arrive at
  a growing rate); movie ids increase with entry, gappy; popularity is Zipf-like;
- users: arrival times spread over the period in waves; ≥ 20 ratings each with a log-normal
  tail; ratings come in sessions (the first holds most of them, seconds apart; later sessions
  over a heavy-tailed span of days to years); a user rates only items already in the catalogue;
- choice: among three popularity-weighted draws the user takes the one they like best (with
  Gumbel noise), so that what is rated is not missing at random;
- rating: 3.1 + b_u + s_u (b_i + p_u·q_i + ε): user and item effects, a rank-10 taste
  interaction, a per-user spread, noise; rounded to half stars (whole stars for a share of
  users) on the published 0.5–5 scale.
"""

from __future__ import annotations

import argparse
import hashlib
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

DAY = 86_400


@dataclass(frozen=True)
class Shape:
    """Counts and period of a release (the GroupLens README of each release)."""

    n_ratings: int
    n_users: int
    n_items: int
    catalogue: int
    start: int
    end: int
    max_movie_id: int


SHAPES = {
    "ml-latest-small": Shape(100_836, 610, 9_724, 11_800, 828_124_615, 1_537_799_250, 193_609),
    "ml-25m": Shape(25_000_095, 162_541, 59_047, 62_423, 789_652_009, 1_574_327_703, 209_171),
}
RANK = 10
CHOICES = 3
MIN_RATINGS = 20


@dataclass
class World:
    """The latent model: item entry times, popularity and effects; user effects and taste."""

    entry: np.ndarray
    popularity: np.ndarray
    b_item: np.ndarray
    q: np.ndarray
    arrival: np.ndarray
    counts: np.ndarray
    b_user: np.ndarray
    spread: np.ndarray
    p: np.ndarray
    whole_stars: np.ndarray


def user_counts(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Ratings per user: 20 plus a log-normal tail, summing exactly to the release's count."""
    cap = max(MIN_RATINGS, shape.catalogue // 3)
    extra = rng.lognormal(0.0, 1.3, shape.n_users)
    extra *= (shape.n_ratings - MIN_RATINGS * shape.n_users) / extra.sum()
    counts = np.minimum(MIN_RATINGS + np.floor(extra), cap).astype(np.int64)
    while counts.sum() < shape.n_ratings:  # what flooring and the cap left, to users with room
        room = np.flatnonzero(counts < cap)
        take = min(shape.n_ratings - int(counts.sum()), len(room))
        counts[rng.choice(room, size=take, replace=False)] += 1
    return counts


def make_world(shape: Shape, seed: int) -> World:
    """Draw the latent model of a release's shape."""
    rng = np.random.default_rng([seed, 0])
    span = shape.end - shape.start
    n_items, n_users = shape.catalogue, shape.n_users
    late = rng.random(n_items) >= 0.4  # 40 % of the catalogue is there from the start
    entry = np.full(n_items, float(shape.start))
    entry[late] = shape.start + span * rng.random(late.sum()) ** 0.6  # arriving ever faster
    entry = np.sort(entry)  # movie ids grow with entry
    popularity = rng.permutation(1.0 / (np.arange(n_items) + 5.0))
    log_pop = np.log(popularity / popularity.mean())
    b_item = rng.normal(0.0, 0.5, n_items) + 0.05 * (log_pop - log_pop.mean())
    waves = rng.choice(3, size=n_users, p=[0.4, 0.2, 0.4])
    centres, widths = np.array([0.12, 0.5, 0.88]), np.array([0.08, 0.2, 0.08])
    arrival = shape.start + span * np.clip(rng.normal(centres[waves], widths[waves]), 0, 0.995)
    return World(
        entry=entry, popularity=popularity, b_item=b_item,
        q=rng.normal(0.0, 1.0, (n_items, RANK)) / RANK ** 0.25,
        arrival=arrival, counts=user_counts(rng, shape),
        b_user=rng.normal(0.0, 0.5, n_users),
        spread=np.exp(rng.normal(0.0, 0.25, n_users)),
        p=rng.normal(0.0, 1.0, (n_users, RANK)) / RANK ** 0.25,
        whole_stars=rng.random(n_users) < 0.35,
    )


def session_times(rng: np.random.Generator, world: World, users: np.ndarray,
                  end: int) -> np.ndarray:
    """One timestamp per rating slot of `users` (each repeated by its count): sessions of
    ratings seconds apart, the first session the largest, later ones over days to years."""
    counts = world.counts[users]
    owner = np.repeat(np.arange(len(users)), counts)
    rank = np.arange(len(owner)) - np.repeat(np.r_[0, np.cumsum(counts)[:-1]], counts)
    n_sessions = 1 + rng.poisson(np.log(counts) - 1.5)
    span = rng.lognormal(np.log(20 * DAY), 2.5, len(users))
    offsets = span[:, None] * np.sort(rng.random((len(users), int(n_sessions.max()))), 1) ** 2
    offsets[:, 0] = 0.0
    later = rank >= rng.uniform(0.3, 0.9, len(users))[owner] * counts[owner]
    session = np.where(later, 1 + rng.integers(0, 1 << 30, len(owner))
                       % np.maximum(n_sessions[owner] - 1, 1), 0)
    session[n_sessions[owner] == 1] = 0
    gaps = rng.exponential(20.0, len(owner))
    order = np.lexsort((rank, session, owner))
    run = np.cumsum(gaps[order])
    first = np.r_[True, (owner[order][1:] != owner[order][:-1])
                  | (session[order][1:] != session[order][:-1])]
    run -= np.maximum.accumulate(np.where(first, run - gaps[order], 0.0))
    stamp = np.empty(len(owner))
    stamp[order] = (world.arrival[users][owner] + offsets[owner, session])[order] + run
    return np.minimum(stamp, end).astype(np.int64)


def choose_items(rng: np.random.Generator, world: World, users: np.ndarray,
                 stamps: np.ndarray) -> np.ndarray:
    """An item per slot, distinct within each user: of three popularity-weighted draws among
    the items in the catalogue at the slot's time, the one the user likes best."""
    counts = world.counts[users]
    owner = np.repeat(np.arange(len(users)), counts)
    cum = np.cumsum(world.popularity)
    available = np.searchsorted(world.entry, stamps, side="right").clip(1)
    item = np.full(len(owner), -1, dtype=np.int64)
    todo = np.arange(len(owner))
    n_items = len(world.entry)
    while len(todo):
        draws = rng.random((len(todo), CHOICES)) * cum[available[todo] - 1, None]
        cand = np.minimum(np.searchsorted(cum, draws, side="right"), n_items - 1)
        u = users[owner[todo]]
        like = world.b_item[cand] + np.einsum("nr,ncr->nc", world.p[u], world.q[cand])
        pick = cand[np.arange(len(todo)), np.argmax(like + rng.gumbel(0, 0.7, like.shape), 1)]
        item[todo] = pick
        key = owner * n_items + item
        order = np.argsort(key, kind="stable")
        dup = np.zeros(len(owner), dtype=bool)
        dup[order[1:]] = key[order[1:]] == key[order[:-1]]
        todo = np.flatnonzero(dup)
    return item


def ratings_of(rng: np.random.Generator, world: World, users: np.ndarray,
               items: np.ndarray) -> np.ndarray:
    """3.1 + b_u + s_u (b_i + p_u·q_i + ε), in half (or whole) stars on 0.5–5."""
    taste = np.einsum("nr,nr->n", world.p[users], world.q[items])
    score = 3.1 + world.b_user[users] + world.spread[users] * (
        world.b_item[items] + 0.45 * taste + rng.normal(0.0, 0.75, len(users)))
    step = np.where(world.whole_stars[users], 1.0, 0.5)
    return np.clip(np.round(score / step) * step, step, 5.0)


def generate(shape: Shape, seed: int = 0, chunk_users: int = 4096):
    """Yield the ratings frame in chunks of users (userId, movieId, rating, timestamp), rows
    sorted by user then movie as upstream."""
    world = make_world(shape, seed)
    movie_ids = np.sort(np.random.default_rng([seed, 1]).choice(
        np.arange(2, shape.max_movie_id + 1), size=shape.catalogue - 1, replace=False))
    movie_ids = np.r_[1, movie_ids]
    for lo in range(0, shape.n_users, chunk_users):
        rng = np.random.default_rng([seed, 2, lo])
        users = np.arange(lo, min(lo + chunk_users, shape.n_users))
        stamps = session_times(rng, world, users, shape.end)
        stamps = np.maximum(stamps, 0)
        items = choose_items(rng, world, users, stamps)
        # a rating cannot precede its movie's entry into the catalogue
        stamps = np.maximum(stamps, np.ceil(world.entry[items]).astype(np.int64))
        owners = np.repeat(users, world.counts[users])
        frame = pd.DataFrame({"userId": owners + 1, "movieId": movie_ids[items],
                              "rating": ratings_of(rng, world, owners, items),
                              "timestamp": stamps})
        yield frame.sort_values(["userId", "movieId"], kind="stable")


def movies_csv(movie_ids: np.ndarray, rng: np.random.Generator) -> str:
    """movies.csv: id, a quoted title with its year, genres."""
    genres = ["Action", "Comedy", "Drama", "Thriller", "Romance", "Sci-Fi", "Animation"]
    rows = ["movieId,title,genres"]
    for mid in movie_ids:
        year = int(rng.integers(1920, 2019))
        picked = "|".join(sorted(set(rng.choice(genres, size=int(rng.integers(1, 4))))))
        rows.append(f'{mid},"Movie {mid}, The ({year})",{picked}')
    return "\n".join(rows) + "\n"


def write_archive(out: Path, name: str, shape: Shape, seed: int = 0) -> Path:
    """`out/<name>.zip` in the upstream layout (ratings.csv written chunk by chunk)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.zip"
    part = path.with_name(path.name + ".part")
    ids: set[int] = set()
    with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        zf.writestr(zipfile.ZipInfo(f"{name}/"), b"")
        with zf.open(f"{name}/ratings.csv", "w", force_zip64=True) as handle:
            handle.write(b"userId,movieId,rating,timestamp\n")
            for frame in generate(shape, seed):
                ids.update(frame["movieId"].unique().tolist())
                handle.write(frame.to_csv(index=False, header=False, float_format="%.1f",
                                          lineterminator="\n").encode())
        movie_rng = np.random.default_rng([seed, 3])
        zf.writestr(f"{name}/movies.csv", movies_csv(np.array(sorted(ids)), movie_rng))
        zf.writestr(f"{name}/links.csv", "movieId,imdbId,tmdbId\n1,0114709,862\n")
        zf.writestr(f"{name}/tags.csv", "userId,movieId,tag,timestamp\n")
        zf.writestr(f"{name}/README.txt", f"Synthetic log shaped like {name} "
                    f"(benchmarks/movielens_like.py, seed {seed}); not GroupLens data.\n")
    part.replace(path)
    return path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="ml-latest-small")
    parser.add_argument("--out", type=Path, required=True, help="folder for <shape>.zip")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    path = write_archive(args.out, args.shape, SHAPES[args.shape], args.seed)
    digest = sha256_of(path)
    print(f"wrote {path} ({path.stat().st_size} bytes) in {time.perf_counter() - start:.0f} s")
    print(f"config override: data: files: {path.name}: sha256: {digest}")


if __name__ == "__main__":
    main()
