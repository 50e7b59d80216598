"""The Python package against the command line: the same documents, byte for byte.

Run by crates/latlab/tests/python.rs (cargo test) with LATLAB_BIN set to the latlab binary,
in the venv scripts/python-venv makes."""

import json
import os
import subprocess
import unittest

import latlab

BIN = os.environ.get("LATLAB_BIN", "latlab")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def cli(*args):
    out = subprocess.run([BIN, *args], check=True, capture_output=True, text=True)
    return out.stdout.strip()


class Local(unittest.TestCase):
    def test_reproduce_is_the_commands_json(self):
        self.assertEqual(latlab.reproduce("sched-cost"), json.loads(cli("reproduce", "sched-cost", "--json")))

    def test_reproduce_reports_each_finished_run_to_its_progress_callback(self):
        seen = []
        doc = latlab.reproduce("sched-cost", progress=seen.append)
        self.assertEqual(doc, latlab.reproduce("sched-cost"))
        self.assertEqual(sorted(e["run"] for e in seen), ["2.4.18 (goodness)", "2.4.18+o1"])
        self.assertEqual([(e["done"], e["runs"]) for e in seen], [(1, 2), (2, 2)])
        self.assertTrue(all(e["experiment"] == "sched-cost" and e["simulated_s"] > 0 for e in seen))

        def stop(event):
            raise KeyboardInterrupt("enough")

        with self.assertRaises(KeyboardInterrupt):
            latlab.reproduce("sched-cost", progress=stop)

    def test_reproduce_carries_each_figures_verdict_and_their_counts(self):
        doc = latlab.reproduce("cfs-granularity")
        judged = [r for r in doc["rows"] if r["inside"] is not None]
        self.assertEqual(doc["summary"]["judged"], len(judged))
        self.assertEqual(doc["summary"]["inside"], sum(r["inside"] for r in judged))
        # Seed 004's average is judged within 2x, its maximum within 1.5x.
        bars = {r["figure"]: r["bar"] for r in judged}
        self.assertEqual(bars["avg_latency"], {"within": 2.0})
        self.assertEqual(bars["max_latency"], {"within": 1.5})
        self.assertTrue(all(r["run"] for r in doc["rows"]))

    def test_run_takes_overrides_and_a_seed_and_returns_each_runs_result(self):
        text = open(os.path.join(ROOT, "experiments", "sched-cost.toml")).read()
        out = latlab.run(text, overrides={"hogs": 10, "machine.kernel_cpi": 2.0}, seed=3)
        self.assertEqual(sorted(out), ["2.4.18 (goodness)", "2.4.18+o1"])
        r = out["2.4.18+o1"]
        self.assertEqual(r["meta"]["seed"], 3)
        self.assertEqual(r["meta"]["kernel"], "2.4.18+o1")
        self.assertTrue(r["streams"][0]["hist"])
        with self.assertRaises(ValueError) as e:
            latlab.run(text, overrides={"machine.colour": 1})
        self.assertIn("colour", str(e.exception))

    def test_uncertainty_here_is_the_commands(self):
        here = latlab.uncertainty("sched-cost", samples=4, seed=2)
        self.assertEqual(json.dumps(here, sort_keys=True),
                         json.dumps(json.loads(cli("uncertainty", "sched-cost", "--samples", "4", "--seed", "2", "--json")), sort_keys=True))
        self.assertEqual(len(here["rows"][0]["values"]), 4)

    def test_a_bad_name_is_a_value_error_naming_the_valid_ones(self):
        with self.assertRaises(ValueError) as e:
            latlab.reproduce("nope")
        self.assertIn("mini-ll", str(e.exception))


class OnRay(unittest.TestCase):
    """A local Ray instance with two CPUs, as a laptop's `ray.init()`."""

    @classmethod
    def setUpClass(cls):
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    @classmethod
    def tearDownClass(cls):
        import ray

        ray.shutdown()

    def test_uncertainty_of_8_draws_on_ray_is_the_local_commands_byte_for_byte(self):
        import latlab.ray

        text = latlab.ray.uncertainty("cfs-granularity", samples=8, seed=1, text=True)
        self.assertEqual(text, cli("uncertainty", "cfs-granularity", "--samples", "8", "--json"))
        self.assertEqual(json.loads(text)["samples"], 8)

    def test_a_sweep_on_ray_is_the_local_commands_byte_for_byte(self):
        import latlab.ray

        text = latlab.ray.sweep("sched-cost", vary={"hogs": [1, 10, 100]}, text=True)
        self.assertEqual(text, cli("reproduce", "sched-cost", "--vary", "hogs=1,10,100", "--json"))
        with self.assertRaises(ValueError):
            latlab.ray.sweep("sched-cost", vary={"hogs": [1], "seed": [2]})


if __name__ == "__main__":
    unittest.main()
