var NAMES = /*EVENT_NAMES*/[];
