"""What a trace asks of a server, before any network: a trace's sessions indexed and loaded on
demand (``source``), planned into threads and turns (``plan``), shaped into the schedule's trees
(``trees``), their request bodies (``build``), the options that decide what is sent when
(``rules``, ``scenario``), and the shape of a trace (``stats``). ``replay`` sends it live;
``simulate`` plays it in virtual time."""
