"""A class-heavy task scheduler (in the spirit of pyperformance's richards,
written here from scratch): tasks of four kinds pass packets through a
scheduler that picks the highest-priority runnable task, with attribute
reads, method calls and small state machines on every step."""

IDLE, WORKER, HANDLER, DEVICE = range(4)


class Packet:
    __slots__ = ("link", "dest", "kind", "datum", "data")

    def __init__(self, link, dest, kind):
        self.link = link
        self.dest = dest
        self.kind = kind
        self.datum = 0
        self.data = [0, 0, 0, 0]

    def append_to(self, queue):
        self.link = None
        if queue is None:
            return self
        p = queue
        while p.link is not None:
            p = p.link
        p.link = self
        return queue


class Task:
    def __init__(self, sched, ident, priority, queue):
        self.sched = sched
        self.ident = ident
        self.priority = priority
        self.queue = queue
        self.waiting = queue is not None
        self.held = False
        self.runs = 0

    def runnable(self):
        return not self.held and (self.queue is not None or not self.waiting)

    def take(self):
        p = self.queue
        if p is None:
            return None
        self.queue = p.link
        return p

    def receive(self, packet):
        self.queue = packet.append_to(self.queue)
        self.waiting = False

    def step(self, packet):
        raise NotImplementedError


class IdleTask(Task):
    def __init__(self, sched, ident, priority, count):
        super().__init__(sched, ident, priority, None)
        self.count = count
        self.seed = 1

    def step(self, packet):
        self.count -= 1
        if self.count == 0:
            self.held = True
            return None
        if self.seed & 1:
            self.seed = (self.seed >> 1) ^ 0xD008
            return self.sched.release(DEVICE)
        self.seed >>= 1
        return self.sched.release(DEVICE + 1)


class WorkerTask(Task):
    def __init__(self, sched, ident, priority, queue):
        super().__init__(sched, ident, priority, queue)
        self.dest = HANDLER
        self.count = 0

    def step(self, packet):
        if packet is None:
            self.waiting = True
            return None
        self.dest = HANDLER + 1 if self.dest == HANDLER else HANDLER
        packet.dest = self.dest
        packet.datum = 0
        for i in range(4):
            self.count = self.count % 26 + 1
            packet.data[i] = self.count
        return self.sched.send(packet)


class HandlerTask(Task):
    def __init__(self, sched, ident, priority, queue):
        super().__init__(sched, ident, priority, queue)
        self.work = None

    def step(self, packet):
        if packet is not None:
            packet.link = None
            self.work = packet if self.work is None else packet.append_to(self.work)
        if self.work is None:
            self.waiting = True
            return None
        w = self.work
        if w.datum < 4:
            w.datum += 1
            if w.datum == 4:
                self.work = w.link
                w.link = None
                w.dest = WORKER
                return self.sched.send(w)
        return None


class DeviceTask(Task):
    def __init__(self, sched, ident, priority):
        super().__init__(sched, ident, priority, None)
        self.pending = None

    def step(self, packet):
        if packet is None:
            if self.pending is None:
                self.waiting = True
                return None
            p, self.pending = self.pending, None
            return self.sched.send(p)
        self.pending = packet
        self.held = True
        return None


class Scheduler:
    def __init__(self):
        self.tasks = {}
        self.steps = 0

    def add(self, task):
        self.tasks[task.ident] = task

    def release(self, ident):
        t = self.tasks.get(ident)
        if t is not None:
            t.held = False
        return t

    def send(self, packet):
        t = self.tasks.get(packet.dest)
        if t is not None:
            t.receive(packet)
        return t

    def run(self, limit):
        order = sorted(self.tasks.values(), key=lambda t: -t.priority)
        while self.steps < limit:
            ran = False
            for t in order:
                if t.runnable():
                    self.steps += 1
                    t.runs += 1
                    t.step(t.take())
                    ran = True
                    break
            if not ran:
                for t in order:
                    t.held = False
                    t.waiting = False
        return sum(t.runs for t in order)


def build():
    s = Scheduler()
    s.add(IdleTask(s, IDLE, 0, 10 ** 9))
    q = None
    for _ in range(3):
        q = Packet(None, WORKER, 0).append_to(q)
    s.add(WorkerTask(s, WORKER, 1000, q))
    for ident in (HANDLER, HANDLER + 1):
        q = None
        for _ in range(3):
            q = Packet(None, ident, 1).append_to(q)
        s.add(HandlerTask(s, ident, 2000 + ident, q))
    s.add(DeviceTask(s, DEVICE, 4000))
    s.add(DeviceTask(s, DEVICE + 1, 5000))
    return s


def main():
    total = 0
    for _ in range(30):
        total += build().run(40000)
    assert total == 1200000, total


if __name__ == "__main__":
    main()
