import { runService } from '@cairn/runtime';
import { watermarkService } from './service.js';

runService(watermarkService());
