"""The existing methods' rows are the same before and after adding a method (wall time aside)."""
import sys, glob
import pandas as pd
def rows(folder):
    f = sorted(glob.glob(f"{folder}/**/compare_smoke.csv", recursive=True)) or sorted(glob.glob(f"{folder}/*.csv"))
    return pd.read_csv([x for x in f if "summary" not in x][0])
a, b = rows(sys.argv[1]), rows(sys.argv[2])
print("   methods before:", sorted(a["method"].unique()))
print("   methods after: ", sorted(b["method"].unique()))
cols = [c for c in a.columns if c != "wall_time_s"]
bb = b[b["method"].isin(a["method"].unique())].reset_index(drop=True)[cols]
same = a[cols].reset_index(drop=True).equals(bb)
print("   existing methods' rows identical (wall time aside):", same)
new = b[~b["method"].isin(a["method"].unique())]
print("   new method's rows:", len(new), "status:", sorted(new["status"].astype(str).str[:20].unique()))
