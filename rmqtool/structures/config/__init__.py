"""The broker's metadata under `config/`, in the broker's JSON dialect (`fastjson`), loaded and
written by its rules (`persist`): the topic table (`topics`), consumer offsets (`offsets`), the
schedule service's progress (`delayoffsets`), subscription groups (`subscriptions`), and the
directory as a whole (`catalog`)."""
