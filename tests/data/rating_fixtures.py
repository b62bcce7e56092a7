"""Tiny rating archives in the exact upstream layouts (inner paths, headers, separators).

Ratings follow a rank-3 model plus noise so that SVD features carry signal; ids are not
contiguous, MovieLens rows are sorted by user then movie (not by time), and some titles hold
quoted commas, as upstream.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

TITLES = ['Toy Story (1995)', 'American President, The (1995)', 'Jumanji (1995)',
          'Shawshank Redemption, The (1994)', '"Great" Escape, The (1963)']


def low_rank_scores(n_users: int, n_items: int, density: float, seed: int) -> pd.DataFrame:
    """Observed (user, item, score) cells: score = rank-3 signal + noise, about N(0, 1)."""
    rng = np.random.default_rng(seed)
    p = rng.standard_normal((n_users, 3))
    q = rng.standard_normal((n_items, 3))
    score = (p @ q.T) / np.sqrt(3) * 0.8 + 0.6 * rng.standard_normal((n_users, n_items))
    mask = rng.random((n_users, n_items)) < density
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True
    users, items = np.nonzero(mask)
    return pd.DataFrame({"user": users, "item": items, "score": score[users, items]})


def movielens_frame(n_users: int = 300, n_items: int = 120, density: float = 0.2,
                    seed: int = 0) -> pd.DataFrame:
    """ml-25m style ratings: userId, movieId (gappy), half stars 0.5–5, unix timestamps."""
    cells = low_rank_scores(n_users, n_items, density, seed)
    rng = np.random.default_rng(seed + 1)
    stars = np.clip(np.round((3.5 + 1.2 * cells["score"].to_numpy()) * 2) / 2, 0.5, 5.0)
    return pd.DataFrame({
        "userId": cells["user"].to_numpy() + 1,
        "movieId": 3 * cells["item"].to_numpy() + 1,
        "rating": stars,
        "timestamp": rng.integers(946_684_800, 1_574_000_000, len(cells)),
    }).sort_values(["userId", "movieId"], kind="stable")


def movies_csv(movie_ids: np.ndarray) -> str:
    rows = ["movieId,title,genres"]
    for i, mid in enumerate(sorted(set(int(m) for m in movie_ids))):
        title = TITLES[i % len(TITLES)]
        if "," in title or '"' in title:
            title = '"' + title.replace('"', '""') + '"'
        rows.append(f"{mid},{title},Comedy|Drama")
    return "\n".join(rows) + "\n"


def _zip(path: Path, members: dict[str, str | bytes], dirs: tuple[str, ...] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for d in dirs:
            zf.writestr(zipfile.ZipInfo(d), b"")
        for name, content in members.items():
            zf.writestr(name, content)
    return path


def ratings_csv_text(frame: pd.DataFrame, newline: str = "\n", trailing_comma: bool = False,
                     bom: bool = False) -> str:
    """ratings.csv text as GroupLens writes it, or in a re-saved variant: CRLF line ends, a comma
    at the end of every line (spreadsheet export), a UTF-8 byte-order mark."""
    text = frame.to_csv(index=False, float_format="%.1f", lineterminator="\n")
    lines = text.splitlines()
    if trailing_comma:
        lines = [line + "," for line in lines]
    return ("\ufeff" if bom else "") + newline.join(lines) + newline


def write_movielens_zip(folder: Path, name: str = "ml-25m", frame: pd.DataFrame | None = None,
                        top_folder: bool = True, newline: str = "\n",
                        trailing_comma: bool = False, bom: bool = False, **kw: object) -> Path:
    """`<name>.zip` holding `<name>/ratings.csv`, `movies.csv`, `tags.csv`, `links.csv`,
    `README.txt` (the ml-25m / ml-latest-small layout; `top_folder=False`: the files at the zip's
    root, as in re-packed copies); ratings from `frame` (default `movielens_frame(**kw)`) in the
    text variant of `ratings_csv_text`."""
    frame = movielens_frame(**kw) if frame is None else frame  # type: ignore[arg-type]
    ratings = ratings_csv_text(frame, newline, trailing_comma, bom)
    movies = movies_csv(frame["movieId"].to_numpy())
    prefix = f"{name}/" if top_folder else ""
    members = {
        f"{prefix}ratings.csv": ratings,
        f"{prefix}movies.csv": movies,
        f"{prefix}tags.csv": "userId,movieId,tag,timestamp\n1,1,\"funny, warm\",1139045764\n",
        f"{prefix}links.csv": "movieId,imdbId,tmdbId\n1,0114709,862\n",
        f"{prefix}README.txt": "Summary\n=======\nfixture\n",
    }
    return _zip(folder / f"{name}.zip", members, dirs=(prefix,) if top_folder else ())


def write_ml100k_zip(folder: Path, **kw: object) -> Path:
    """`ml-100k.zip` with tab-separated `ml-100k/u.data` (no header)."""
    f = movielens_frame(**kw).sample(frac=1.0, random_state=0)  # type: ignore[arg-type]
    rows = f.itertuples(index=False)
    text = "".join(f"{u}\t{m}\t{int(np.ceil(r))}\t{t}\n" for u, m, r, t in rows)
    return _zip(folder / "ml-100k.zip", {"ml-100k/u.data": text}, dirs=("ml-100k/",))


def write_ml1m_zip(folder: Path, **kw: object) -> Path:
    """`ml-1m.zip` with `ml-1m/ratings.dat` (`::`-separated)."""
    f = movielens_frame(**kw)  # type: ignore[arg-type]
    rows = f.itertuples(index=False)
    text = "".join(f"{u}::{m}::{int(np.ceil(r))}::{t}\n" for u, m, r, t in rows)
    return _zip(folder / "ml-1m.zip", {"ml-1m/ratings.dat": text}, dirs=("ml-1m/",))


def jester_frame(n_users: int = 200, n_items: int = 150, density: float = 0.3,
                 seed: int = 2) -> pd.DataFrame:
    """Jester ratings in [−10, 10] with two decimals; joke ids from 1."""
    cells = low_rank_scores(n_users, n_items, density, seed)
    rating = np.clip(np.round(4.0 * cells["score"].to_numpy(), 2), -10.0, 10.0)
    return pd.DataFrame({"user": cells["user"] + 1, "item": cells["item"] + 1, "rating": rating})


def write_jester2_zip(folder: Path, inner: str = "", newline: str = "\n", **kw: object) -> Path:
    """`jester_dataset_2.zip`: `jester_ratings.dat` (user, joke, rating; tab-tab separated) and
    `jester_items.dat` at the zip's root (upstream), or under the folder `inner`."""
    f = jester_frame(**kw)  # type: ignore[arg-type]
    text = "".join(f"{u}\t\t{i}\t\t{r:.2f}{newline}" for u, i, r in f.itertuples(index=False))
    items = "".join(f"{i}:\n<p>joke {i}</p>\n\n" for i in range(1, 151))
    prefix = f"{inner}/" if inner else ""
    return _zip(folder / "jester_dataset_2.zip",
                {f"{prefix}jester_ratings.dat": text, f"{prefix}jester_items.dat": items})


def jester_matrix(n_users: int = 60, n_jokes: int = 100, density: float = 0.5,
                  seed: int = 3) -> np.ndarray:
    """users × (1 + jokes): column 0 the count of rated jokes, 99 = not rated."""
    f = jester_frame(n_users, n_jokes, density, seed)
    grid = np.full((n_users, n_jokes), 99.0)
    grid[f["user"] - 1, f["item"] - 1] = f["rating"]
    return np.hstack([(grid != 99.0).sum(axis=1, keepdims=True), grid])


def xls_bytes(matrix: np.ndarray) -> bytes:
    """A BIFF8 `.xls` workbook of `matrix` (no header row), as Jester dataset 1 ships."""
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("jester-data")
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            sheet.write(i, j, int(value) if j == 0 else float(value))
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def xlsx_bytes(matrix: np.ndarray) -> bytes:
    """The same matrix as an `.xlsx` workbook."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    for row in matrix:
        sheet.append([int(row[0]), *[float(v) for v in row[1:]]])
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def write_jester1_zips(folder: Path, n_users: int = 40) -> list[Path]:
    """`jester_dataset_1_{1,2,3}.zip`, each holding `jester-data-{i}.xls` at its root."""
    return [_zip(folder / f"jester_dataset_1_{i}.zip",
                 {f"jester-data-{i}.xls": xls_bytes(jester_matrix(n_users, seed=10 + i))})
            for i in (1, 2, 3)]


ML_SMALL_START, ML_SMALL_END = 828_000_000, 1_537_800_000  # 1996-03-29 .. 2018-09-24


def ml_latest_small_frame(n_users: int = 610, n_items: int = 9742, n_ratings: int = 100_836,
                          rank: int = 10, seed: int = 0) -> pd.DataFrame:
    """An ml-latest-small-shaped log: heavy-tailed user activity (≥ 20 ratings each), Zipf item
    popularity, gappy movie ids, rating = 3.5 + user bias + item bias + rank-`rank` taste +
    noise in half stars (a share of users rates whole stars), each user's ratings in bursts
    after an arrival time spread over 1996–2018; sorted by user then movie as upstream."""
    rng = np.random.default_rng(seed)
    cap = n_items // 3
    if not 20 * n_users <= n_ratings <= cap * n_users:
        raise ValueError(f"n_ratings = {n_ratings} does not fit {n_users} users rating 20 to "
                         f"{cap} of {n_items} items each")
    activity = rng.lognormal(0.0, 1.3, n_users)
    counts = np.minimum(20 + activity * (n_ratings - 20 * n_users) / activity.sum(),
                        cap).astype(np.int64)
    while counts.sum() < n_ratings:  # hand out what the cap and the rounding left
        room = np.flatnonzero(counts < cap)
        counts[rng.choice(room, size=min(n_ratings - counts.sum(), len(room)),
                          replace=False)] += 1
    popularity = rng.permutation((np.arange(n_items) + 10.0) ** -0.9)
    popularity /= popularity.sum()
    b_user = rng.normal(0.0, 0.35, n_users)
    b_item = rng.normal(0.0, 0.3, n_items) + 0.08 * np.log(popularity * n_items)
    p = rng.normal(0.0, 1.0, (n_users, rank)) / rank ** 0.25
    q = rng.normal(0.0, 1.0, (n_items, rank)) / rank ** 0.25
    whole_stars = rng.random(n_users) < 0.4
    arrival = rng.uniform(ML_SMALL_START, ML_SMALL_END - 86_400, n_users)
    spread = rng.lognormal(np.log(86_400.0), 2.5, n_users)
    users, items, stars, times = [], [], [], []
    for u in range(n_users):
        chosen = rng.choice(n_items, size=int(counts[u]), replace=False, p=popularity)
        score = 3.5 + b_user[u] + b_item[chosen] + 0.6 * (q[chosen] @ p[u]) \
            + rng.normal(0.0, 0.7, len(chosen))
        step = 1.0 if whole_stars[u] else 0.5
        stars.append(np.clip(np.round(score / step) * step, 0.5 if step == 0.5 else 1.0, 5.0))
        users.append(np.full(len(chosen), u))
        items.append(chosen)
        times.append(np.minimum(arrival[u] + rng.exponential(spread[u], len(chosen)),
                                ML_SMALL_END).astype(np.int64))
    movie_ids = np.sort(rng.choice(np.arange(1, 193_610), size=n_items, replace=False))
    movie_ids[0] = 1
    return pd.DataFrame({
        "userId": np.concatenate(users) + 1,
        "movieId": movie_ids[np.concatenate(items)],
        "rating": np.concatenate(stars),
        "timestamp": np.concatenate(times),
    }).sort_values(["userId", "movieId"], kind="stable").reset_index(drop=True)


def small_rating_log(name: str):
    """A 120-user, 400-item, 6,000-rating ml-latest-small-shaped log as `build_log` stores it
    (users arrive over the years, so its time order differs from its row order)."""
    from dpbandits.data.ratings import RawRatings, build_log

    frame = ml_latest_small_frame(n_users=120, n_items=400, n_ratings=6000, seed=3)
    return build_log(name, RawRatings(
        user=frame["userId"].to_numpy(), item=frame["movieId"].to_numpy(),
        rating=frame["rating"].to_numpy(np.float32), time=frame["timestamp"].to_numpy()))
