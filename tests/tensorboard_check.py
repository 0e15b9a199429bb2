"""tensorboard_check.py: tests/tensorboard.t's checks, in TensorBoard's own
Python. `read LOG_DIR LAB_OUTPUT` loads the run with TensorBoard's event
loader and compares its tags, steps and values with the lines the lab
printed; `chief LOG_DIR OUTPUT` checks chapter 3's cluster wrote one
file, the chief's; `losses NAME LOG_DIR OUTPUT` any lab's loss curve;
`killed LOG_DIR OUTPUT` a run killed mid-training; `serve URL LAB_OUTPUT` asks a running `tensorboard --logdir` for
the loss curve and the graph. Prints TAP lines without numbers (ok - ...)
that tensorboard.t numbers; diagnostics start with '#'."""
import json
import re
import sys
import urllib.request


def check(passed, what, why=""):
    print(("ok - " if passed else "not ok - ") + what)
    if not passed and why != "":
        print("# " + str(why).replace("\n", "\n# "))
    return passed


def printed(lab_output):
    """The lab's progress lines: {step: (loss, images/sec)}, and its test accuracy."""
    text = open(lab_output).read()
    steps = {int(s): (float(loss), float(rate)) for s, loss, rate in
             re.findall(r"Step (\d+) with loss ([0-9.]+) \(([0-9.]+) images/sec\)", text)}
    accuracy = re.search(r"Test accuracy: ([0-9.]+)", text)
    return steps, float(accuracy.group(1)) if accuracy else None


def read(log_dir, lab_output):
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(log_dir, size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    print("# TensorBoard read the scalars %s and %d histograms" % (tags["scalars"], len(tags["histograms"])))
    steps, accuracy = printed(lab_output)
    wanted = {"loss", "accuracy", "images_per_sec", "global_step/sec"}
    if not check(wanted <= set(tags["scalars"]), "the scalars loss, accuracy, images_per_sec, global_step/sec",
                 tags["scalars"]):
        return
    loss = {e.step: e.value for e in acc.Scalars("loss")}
    check(len(steps) >= 3 and all(abs(loss.get(s, -1) - v[0]) <= 5e-7 + 1e-6 * v[0] for s, v in steps.items()),
          "loss at each printed step equals the printed loss", {s: (loss.get(s), v[0]) for s, v in steps.items()})
    rate = {e.step: e.value for e in acc.Scalars("images_per_sec")}
    check(set(rate) == set(steps) and all(abs(rate[s] - v[1]) <= 0.051 for s, v in steps.items()),
          "images_per_sec at the printed steps equals the printed rate", (rate, steps))
    check(all(e.value > 0 for e in acc.Scalars("global_step/sec")), "global_step/sec is positive")
    got = acc.Scalars("accuracy")
    check(accuracy is not None and len(got) == 1 and abs(got[0].value - accuracy) <= 5.1e-5,
          "accuracy equals the printed test accuracy", (got, accuracy))
    check(len(tags["histograms"]) >= 4 and all(len(acc.Histograms(t)) >= 2 for t in tags["histograms"]),
          "a histogram of every variable at least twice (--histogram_every)", tags["histograms"])
    graph = acc.Graph()
    names = {n.name for n in graph.node}
    check(tags["graph"] and "loss" in names and any(n.startswith("conv_1/") for n in names),
          "the graph with its name scopes (%d nodes)" % len(names), sorted(names)[:20])


def chief(log_dir, cluster_output):
    """Between graphs: one event file, the chief's, with worker 0's accuracy."""
    import glob
    from tensorboard.backend.event_processing import event_accumulator

    files = glob.glob(log_dir + "/*tfevents*")
    check(len(files) == 1, "between graphs, one event file: the chief's", files)
    acc = event_accumulator.EventAccumulator(log_dir)
    acc.Reload()
    printed_accuracy = re.search(r"worker 0: test accuracy ([0-9.]+)", open(cluster_output).read())
    got = acc.Scalars("accuracy") if "accuracy" in acc.Tags()["scalars"] else []
    check({"loss", "images_per_sec"} <= set(acc.Tags()["scalars"]) and printed_accuracy is not None and
          len(got) == 1 and abs(got[0].value - float(printed_accuracy.group(1))) <= 5.1e-5,
          "it holds the loss, images_per_sec and the chief's test accuracy", (acc.Tags()["scalars"], got))
    check(len(acc.Tags()["histograms"]) >= 4, "and the variables' histograms, read from the ps",
          acc.Tags()["histograms"])


def losses(name, log_dir, lab_output):
    """Any lab: one event file, the graph, and the printed losses."""
    import glob
    from tensorboard.backend.event_processing import event_accumulator

    files = glob.glob(log_dir + "/*tfevents*")
    acc = event_accumulator.EventAccumulator(log_dir, size_guidance={"scalars": 0})
    acc.Reload()
    steps = {int(s): float(v) for s, v in re.findall(r"Step (\d+) with loss ([0-9.]+)", open(lab_output).read())}
    loss = {e.step: e.value for e in acc.Scalars("loss")} if "loss" in acc.Tags()["scalars"] else {}
    check(len(files) == 1 and acc.Tags()["graph"] and len(steps) >= 2 and
          all(abs(loss.get(s, -1) - v) <= 5e-7 + 1e-6 * v for s, v in steps.items()),
          "%s: one event file, the graph, and the printed losses" % name, (files, steps, loss))


def killed(log_dir, lab_output):
    """A lab killed with SIGKILL: the loader reads every loss up to the kill."""
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(log_dir, size_guidance={"scalars": 0})
    acc.Reload()
    steps, _ = printed(lab_output)
    got = [e.step for e in acc.Scalars("loss")] if "loss" in acc.Tags()["scalars"] else []
    check(len(got) >= 10 and got == list(range(len(got))), "a killed run reads as losses 0 to %d, none missing" %
          (len(got) - 1), got)


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.read().decode()


def serve(url, lab_output):
    steps, _ = printed(lab_output)
    try:
        points = json.loads(fetch(url + "/data/plugin/scalars/scalars?run=.&tag=loss"))
    except Exception as error:  # the endpoint's failure is the test's finding
        check(False, "the scalars endpoint answers", error)
        return
    got = {int(step): value for _, step, value in points}
    check(all(abs(got.get(s, -1) - v[0]) <= 5e-7 + 1e-6 * v[0] for s, v in steps.items()),
          "its loss curve has the printed losses (%d points)" % len(got), got)
    graph = fetch(url + "/data/plugin/graphs/graph?run=.&conversion_msg_limit=0")
    check('name: "loss"' in graph and 'op: "Conv2D"' in graph, "the graph endpoint gives the graph",
          graph[:300])


if __name__ == "__main__":
    {"read": read, "serve": serve, "chief": chief, "losses": losses, "killed": killed}[sys.argv[1]](*sys.argv[2:])
