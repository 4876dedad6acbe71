import { runService } from '@cairn/runtime';
import { softbindingService } from './service.js';

runService(softbindingService());
