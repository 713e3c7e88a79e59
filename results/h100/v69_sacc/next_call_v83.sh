#!/usr/bin/env bash
# Written in session 46, not run (its device time was spent). v83a_adesc and v83b_wg1scan (make_v83.py: A's
# descriptors stepped; the gate scan off warpgroup 0) against v79b_gblate: builds, harness run 1, probe76 (bare on
# the three, reg on v83b and v79b), Nsight Compute
# (--set full, sources, clocks not locked) on the third gd_wsh_kernel launch at large of each (NCU=0: none), under
# an nvidia-smi log of clocks, power and clock-event reasons (read only), then harness run 2 while DL allows.
# One tarball ($OUT/v83.tgz, .ncu-rep files left out). Knobs: DL, CANDS, PROBE_JOBS (name:mode), NCU.
# Session 47: probe76 also reads each CTA's entry, SM and exit (lines "CTAs:", "SMs:"; marks under $L/cta), and
# v83c_early (v83b with chunk 0's boxes before the setup's zeroing) joins the harness runs and the bare probes
# (~35 s more a harness run: DL 480 -> 540, ~510 s on a started machine).
# Session 47: the steps moved into call.sh (shared by later calls); this file names what this call runs.
# Before: python results/h100/v69_sacc/make_v83.py
TAG=v83 NEW="v83a_adesc v83b_wg1scan v83c_early" GEN=results/h100/v69_sacc/make_v83.py \
  PROBE_JOBS=${PROBE_JOBS:-"v79b_gblate:bare v83a_adesc:bare v83b_wg1scan:bare v83c_early:bare v83b_wg1scan:reg v79b_gblate:reg"} \
  NCU_FILES="v79b_gblate v83b_wg1scan" DL=${DL:-540} exec bash results/h100/v69_sacc/call.sh
